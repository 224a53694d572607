import EventLoop

/// What a ``RedisLink`` tells its client. Loop-confined.
protocol RedisLinkDelegate: AnyObject {
    /// The connection is set up (`AUTH`, `SELECT`, `PING` answered): commands may go.
    func linkBecameReady(_ link: RedisLink)
    /// An attempt failed (`wasReady` false) or a ready connection was lost; the link retries
    /// after its backoff delay.
    func link(_ link: RedisLink, failed error: RedisError, wasReady: Bool)
    /// A pub/sub reply on the connection.
    func link(_ link: RedisLink, pushed reply: RedisReply)
}

/// One of a ``RedisClient``'s two connections (commands, or pub/sub), kept up: each attempt
/// resolves the host, connects, sets the connection up and, once a `PING` is answered, is
/// ready; a failure or a lost connection waits out the backoff delay and starts again.
/// Loop-confined.
///
/// ```
///            ┌──────────────── retry timer (100 ms, 200 ms, … 5 s) ◀──────────────┐
///            ▼                                                                    │
/// start ─▶ resolving ─▶ setting up (connect, AUTH, SELECT, PING) ─▶ ready ──lost──┤
///            │ fails          │ fails, or the connect timeout passes              │
///            └────────────────┴───────────────────────────────────────────────────┘
/// ```
///
/// The command link also probes a ready connection with `PING` every health-check interval;
/// no answer within the command timeout counts as a lost connection.
final class RedisLink {
    enum Role {
        /// Runs commands; `SELECT`s the database; health-checked.
        case commands
        /// Carries `SUBSCRIBE`: hiredis 0.14 cannot `PING` a subscribed connection (it
        /// misroutes the reply), so only TCP keepalive watches it.
        case subscriptions
    }

    private enum Phase {
        /// Not started, or waiting for the retry timer.
        case waiting
        case resolving(AddressResolver.Request)
        case settingUp(RedisConnection)
        case ready(RedisConnection)
        case shutDown
    }

    let role: Role
    let loop: EventLoop
    let endpoint: RedisEndpoint
    let configuration: RedisClient.Configuration
    weak var delegate: (any RedisLinkDelegate)?
    /// Connection attempts started, for metrics and for tests that check the backoff.
    private(set) var attempts = 0
    /// The latest failure, the detail of commands refused while not ready.
    private(set) var lastError: RedisError?

    private var phase = Phase.waiting
    private var nextDelay: Duration
    private var resolver: AddressResolver?
    private var retryTimer: LoopTimer!
    private var connectDeadline: LoopTimer!
    private var healthTimer: LoopTimer?
    private var probe: RedisCall?

    init(role: Role, loop: EventLoop, endpoint: RedisEndpoint, configuration: RedisClient.Configuration) {
        self.role = role
        self.loop = loop
        self.endpoint = endpoint
        self.configuration = configuration
        nextDelay = Self.firstDelay(configuration)
        retryTimer = LoopTimer(loop: loop) { [unowned self] in attempt() }
        connectDeadline = LoopTimer(loop: loop) { [unowned self] in
            reset(RedisError(.connectFailed, "\(endpoint) not ready within \(configuration.connectTimeout)"))
        }
        if role == .commands && configuration.healthCheckInterval != nil {
            healthTimer = LoopTimer(loop: loop) { [unowned self] in checkHealth() }
        }
    }

    var isReady: Bool {
        if case .ready = phase { return true }
        return false
    }

    /// The ready connection's ``RedisConnection/waitingSlots`` (0 when not ready).
    var waitingSlots: Int {
        if case .ready(let connection) = phase { return connection.waitingSlots }
        return 0
    }

    /// Makes the first attempt now.
    func start() {
        guard case .waiting = phase, !retryTimer.isScheduled else { return }
        attempt()
    }

    /// Sends `call` on the ready connection, or fails it at once with
    /// ``RedisError/Kind/unavailable``.
    func send(_ call: RedisCall) {
        guard case .ready(let connection) = phase else {
            call.complete(.failure(RedisError(.unavailable, "not connected to \(endpoint)")))
            return
        }
        connection.send(call)
    }

    /// Sends `SUBSCRIBE`/`UNSUBSCRIBE` on the ready connection; false when not ready or refused.
    func sendPubSub(_ arguments: [[UInt8]]) -> Bool {
        guard case .ready(let connection) = phase else { return false }
        return connection.sendPubSub(arguments)
    }

    /// Drops the current attempt or connection (calls waiting on it fail with
    /// ``RedisError/Kind/connectionLost``) and retries after the backoff delay.
    func reset(_ error: RedisError) {
        let previous = phase
        if case .waiting = previous { return }
        if case .shutDown = previous { return }
        // The client stays alive until the calls below have heard of the loss, even if
        // someone drops it when told of the state change.
        withExtendedLifetime(delegate) {
            ended(error)
            switch previous {
            case .resolving(let request): request.cancel()
            case .settingUp(let connection): connection.close(failing: nil)
            case .ready(let connection): connection.close(failing: RedisError(.connectionLost, error.detail))
            case .waiting, .shutDown: break
            }
        }
    }

    /// Stops for good, without calling anyone back: calls waiting for a reply are dropped
    /// (their completion handlers never run), timers and lookups cancelled, the connection freed.
    func shutdown() {
        let phase = self.phase
        self.phase = .shutDown
        delegate = nil
        retryTimer.cancel()
        connectDeadline.cancel()
        healthTimer?.cancel()
        probe?.abandon()
        switch phase {
        case .resolving(let request): request.cancel()
        case .settingUp(let connection), .ready(let connection): connection.close(failing: nil)
        case .waiting, .shutDown: break
        }
    }

    // MARK: - Attempts

    private func attempt() {
        guard case .waiting = phase else { return }
        attempts += 1
        connectDeadline.schedule(after: configuration.connectTimeout)
        guard !endpoint.isIPAddressLiteral else {
            connect(to: endpoint.host)
            return
        }
        do {
            if resolver == nil { resolver = try AddressResolver(loop: loop) }
            phase = .resolving(resolver!.resolve(endpoint.host, port: endpoint.port) { [unowned self] result in
                switch result {
                case .success(let address):
                    phase = .waiting
                    connect(to: address)
                case .failure(let failure):
                    phase = .waiting
                    ended(RedisError(.connectFailed, failure.description))
                }
            })
        } catch {
            ended(RedisError(.connectFailed, error.description))
        }
    }

    private func connect(to address: String) {
        do {
            let connection = try RedisConnection(loop: loop, address: address, port: endpoint.port) { [unowned self] event in
                handle(event)
            }
            phase = .settingUp(connection)
        } catch {
            ended(error)
        }
    }

    private func handle(_ event: RedisConnection.Event) {
        switch (event, phase) {
        case (.connected, .settingUp(let connection)):
            setUp(connection)
        case (.closed(let error), .settingUp):
            ended(RedisError(.connectFailed, error.detail))
        case (.closed(let error), .ready):
            ended(error)
        case (.pushed(let reply), .ready):
            delegate?.link(self, pushed: reply)
        default:
            break
        }
    }

    /// Pipelines `AUTH`, `SELECT` and `PING`; the `PING`'s answer makes the link ready.
    /// Replies come in order, so an error answer to `AUTH` or `SELECT` ends the attempt
    /// before the `PING` answer is looked at.
    private func setUp(_ connection: RedisConnection) {
        var commands: [RedisCommand] = []
        if let password = endpoint.password {
            commands.append(endpoint.username.map { RedisCommand("AUTH", $0, password) } ?? RedisCommand("AUTH", password))
        }
        if role == .commands && endpoint.database != 0 {
            commands.append(RedisCommand("SELECT", endpoint.database))
        }
        commands.append(RedisCommand("PING"))
        for (index, command) in commands.enumerated() {
            let isLast = index == commands.count - 1
            connection.send(RedisCall(command: command) { [unowned self] result in
                setUpAnswered(command, result, connection: connection, isLast: isLast)
            })
        }
    }

    private func setUpAnswered(_ command: RedisCommand, _ result: Result<RedisReply, RedisError>, connection: RedisConnection, isLast: Bool) {
        guard case .settingUp(let current) = phase, current === connection else { return }
        switch result {
        case .success(.error(let message)):
            reset(RedisError(.connectFailed, "\(endpoint) answered \(command.name) with \(message)"))
        case .failure(let error):
            reset(RedisError(.connectFailed, error.detail))
        case .success:
            guard isLast else { return }
            becomeReady(connection)
        }
    }

    private func becomeReady(_ connection: RedisConnection) {
        phase = .ready(connection)
        connectDeadline.cancel()
        nextDelay = Self.firstDelay(configuration)
        lastError = nil
        if let interval = configuration.healthCheckInterval { healthTimer?.scheduleRepeating(every: interval) }
        delegate?.linkBecameReady(self)
    }

    /// The attempt or connection is over: wait, then try again.
    private func ended(_ error: RedisError) {
        let wasReady = isReady
        phase = .waiting
        lastError = error
        connectDeadline.cancel()
        healthTimer?.cancel()
        probe?.abandon()
        probe = nil
        retryTimer.schedule(after: nextDelay)
        nextDelay = min(nextDelay * 2, configuration.reconnectDelay.upperBound)
        delegate?.link(self, failed: error, wasReady: wasReady)
    }

    /// The configured lower bound, but never zero: doubling zero would retry in a tight loop.
    private static func firstDelay(_ configuration: RedisClient.Configuration) -> Duration {
        max(configuration.reconnectDelay.lowerBound, .milliseconds(1))
    }

    // MARK: - Health

    /// Sends a `PING` unless the previous one is still out; no answer in time resets.
    private func checkHealth() {
        guard case .ready(let connection) = phase, probe?.isFinished ?? true else { return }
        let timeout = configuration.commandTimeout
        let probe = RedisCall(command: RedisCommand("PING")) { [unowned self] result in
            guard case .failure(let error) = result, error.kind == .timeout else { return }
            reset(RedisError(.timeout, "no answer to PING within \(timeout)"))
        }
        self.probe = probe
        probe.startDeadline(loop: loop, after: timeout)
        connection.send(probe)
    }
}
