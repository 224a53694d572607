public import EventLoop
public import OpenCombine

/// A Redis client on one worker's ``EventLoop``: hiredis connections driven by the loop's
/// own libevent (no second event-loop system, no blocking call), commands with deadlines,
/// pub/sub, and reconnecting with backoff. Loop-confined: make it, use it and drop it on
/// its loop.
///
/// It keeps two connections, because a subscribed connection can run nothing but pub/sub
/// commands: one for commands (``send(_:completion:)``, ``publisher(for:)``), one for
/// ``subscribe(to:)``, whose channels are shared (one `SUBSCRIBE` however many subscribers)
/// and subscribed again after every reconnect.
///
/// A slow or dead Redis never stalls the worker: every command has a deadline
/// (``RedisError/Kind/timeout``), commands while disconnected fail at once
/// (``RedisError/Kind/unavailable``) instead of queueing, connection attempts have their own
/// deadline, and a `PING` health check turns a Redis that stopped answering into a
/// disconnection. ``states`` says when to fall back to working alone and when to rejoin.
///
/// ```swift
/// let redis = RedisClient(loop: loop, endpoint: try RedisEndpoint("redis://127.0.0.1:6379"))
/// redis.send(RedisCommand("SET", "greeting", "hello")) { result in … }
/// let get = redis.publisher(for: RedisCommand("GET", "greeting"))   // Output: RedisReply
/// let reloads = redis.subscribe(to: "fleet:reload").compactMap(\.payload)
/// let health = redis.states.sink { state in metrics.clusterConnected = state == .connected }
/// let log = redis.failures.sink { error in logger.warning("redis: \(error)") }
/// ```
///
/// Dropping the client frees its connections at once (from inside one of its own callbacks,
/// on the next loop turn); the completion handlers of commands still in flight are then never
/// called. (A publisher's subscription holds the client, so it cannot be dropped under one.)
public final class RedisClient {
    /// Whether the client can do its whole job: both connections set up and every channel
    /// subscribed again after a reconnect. Commands are sent only while connected, so what
    /// the state says and what a command meets agree.
    public enum State: String, Sendable {
        case connected
        case disconnected
    }

    /// The worker loop everything of this client happens on.
    public let loop: EventLoop
    /// Where Redis is; resolved again on every connection attempt.
    public let endpoint: RedisEndpoint
    public let configuration: Configuration

    private let commands: RedisLink
    private let pubSub: RedisLink
    let channels: ChannelSubscriptions
    private let stateSubject = CurrentValueSubject<State, Never>(.disconnected)
    private let failureSubject = PassthroughSubject<RedisError, Never>()

    /// Starts connecting at once (the first attempt is made before `init` returns).
    public init(loop: EventLoop, endpoint: RedisEndpoint, configuration: Configuration = Configuration()) {
        self.loop = loop
        self.endpoint = endpoint
        self.configuration = configuration
        commands = RedisLink(role: .commands, loop: loop, endpoint: endpoint, configuration: configuration)
        pubSub = RedisLink(role: .subscriptions, loop: loop, endpoint: endpoint, configuration: configuration)
        channels = ChannelSubscriptions(link: pubSub)
        commands.delegate = self
        pubSub.delegate = self
        commands.start()
        pubSub.start()
    }

    deinit {
        commands.shutdown()
        pubSub.shutdown()
    }

    /// The state now.
    public var state: State { stateSubject.value }

    /// The state now, then each change once (`disconnected` → `connected` → …), on the loop.
    public var states: AnyPublisher<State, Never> { stateSubject.eraseToAnyPublisher() }

    /// Each failed connection attempt and each lost connection, with the reason, as it
    /// happens (at most one per connection per backoff delay): for the log, including while
    /// Redis has been unreachable since the start and ``states`` has nothing to say.
    public var failures: AnyPublisher<RedisError, Never> { failureSubject.eraseToAnyPublisher() }

    /// Why the client last failed to connect or lost a connection (nil once connected again),
    /// for the log line that goes with `disconnected`.
    public var lastFailure: RedisError? { commands.lastError ?? pubSub.lastError }

    /// Connection attempts started so far, by both connections.
    public var connectAttempts: Int { commands.attempts + pubSub.attempts }

    /// Slots of the command connection's line of calls waiting for their replies, answered
    /// ones not compacted yet included: what the line costs in memory.
    var commandLineSlots: Int { commands.waitingSlots }

    /// Sends a command; `completion` runs once on the loop with the reply (an error reply is
    /// a ``RedisReply/error(_:)`` value) or a ``RedisError``, unless the call is cancelled or
    /// the client dropped first. While ``state`` is `disconnected` (``RedisError/Kind/unavailable``),
    /// and for a refused command, it runs at once, before `send` returns.
    @discardableResult
    public func send(_ command: RedisCommand, completion: @escaping (Result<RedisReply, RedisError>) -> Void) -> RedisCall {
        let call = RedisCall(command: command, completion: completion)
        if let refusal = command.refusal {
            call.complete(.failure(refusal))
        } else if state == .disconnected {
            let reason = "not connected to \(endpoint)" + (lastFailure.map { " (last failure: \($0.detail))" } ?? "")
            call.complete(.failure(RedisError(.unavailable, reason)))
        } else {
            call.startDeadline(loop: loop, after: command.timeout ?? configuration.commandTimeout)
            commands.send(call)
        }
        return call
    }

    private func updateState() {
        let now: State = commands.isReady && pubSub.isReady && channels.awaitingResubscription.isEmpty ? .connected : .disconnected
        if now != stateSubject.value { stateSubject.send(now) }
    }
}

extension RedisClient: RedisLinkDelegate {
    func linkBecameReady(_ link: RedisLink) {
        if link === pubSub { channels.linkBecameReady() }
        updateState()
    }

    func link(_ link: RedisLink, failed error: RedisError, wasReady: Bool) {
        if link === pubSub { channels.linkWasLost() }
        updateState()
        failureSubject.send(error)
        // A command connection that stopped answering says the same of the pub/sub one,
        // which cannot be probed: remake both.
        if link === commands && wasReady && error.kind == .timeout {
            pubSub.reset(error)
        }
    }

    func link(_ link: RedisLink, pushed reply: RedisReply) {
        channels.received(reply)
        updateState()
    }
}
