import EventLoop
import OpenCombine
import Redis
import TributaryTesting

/// A ``RedisClient`` on a loop thread of its own, and what it reported: every state it
/// published, in order, and the outcome of each numbered command.
final class RedisHarness: Sendable {
    typealias Outcome = Result<RedisReply, RedisError>

    let thread: LoopThread
    let client: LoopBound<RedisClient>
    let states = Observed<[RedisClient.State]>([])
    let outcomes = Observed<[Int: Outcome]>([:])
    let failures = Observed<[RedisError]>([])
    /// Subscriptions made through ``keep(_:)``, dropped with the client.
    private let kept: LoopBound<Kept>

    private final class Kept {
        var cancellables: [AnyCancellable] = []
    }

    init(_ url: String, _ configuration: RedisClient.Configuration = .init()) async throws {
        let endpoint = try RedisEndpoint(url)
        thread = try LoopThread()
        let states = self.states
        let failures = self.failures
        (client, kept) = try await thread.run { loop in
            let client = RedisClient(loop: loop, endpoint: endpoint, configuration: configuration)
            let kept = Kept()
            kept.cancellables.append(client.states.sink { state in states.update { $0.append(state) } })
            kept.cancellables.append(client.failures.sink { error in failures.update { $0.append(error) } })
            return (LoopBound(client, loop: loop), LoopBound(kept, loop: loop))
        }
    }

    /// Waits until the client has published `.connected`.
    func connected(within timeout: Duration = .seconds(5)) async -> Bool {
        await states.wait(timeout: timeout) { $0.last == .connected }
    }

    /// Sends command number `id`; its outcome lands in `outcomes[id]`.
    func start(_ id: Int, _ command: RedisCommand) async throws {
        let client = self.client
        let outcomes = self.outcomes
        try await thread.run { _ in
            _ = client.value.send(command) { outcome in outcomes.update { $0[id] = outcome } }
        }
    }

    /// Sends a command and waits for its outcome (every command has a deadline).
    func outcome(_ command: RedisCommand) async throws -> Outcome {
        let client = self.client
        return try await withCheckedThrowingContinuation { continuation in
            thread.loop.execute {
                _ = client.value.send(command) { outcome in continuation.resume(returning: outcome) }
            }
        }
    }

    /// Sends a command and waits for its outcome, with how long it took on the loop's thread:
    /// from sending to the completion handler, both on the loop, so the figure is the
    /// client's, whenever this task gets to run again afterwards.
    func timedOutcome(_ command: RedisCommand) async throws -> (outcome: Outcome, took: Duration) {
        let client = self.client
        return try await withCheckedThrowingContinuation { continuation in
            thread.loop.execute {
                let sent = ContinuousClock.now
                _ = client.value.send(command) { outcome in continuation.resume(returning: (outcome, ContinuousClock.now - sent)) }
            }
        }
    }

    /// The reply to a command, which must not fail.
    func reply(_ name: String, _ arguments: any RedisArgument...) async throws -> RedisReply {
        try await outcome(RedisCommand(arguments: [Array(name.utf8)] + arguments.map(\.redisBytes))).get()
    }

    /// Subscribes to `channel`; the events land in the returned list.
    func subscribe(_ channel: String) async throws -> Observed<[RedisChannelEvent]> {
        let events = Observed<[RedisChannelEvent]>([])
        try await keep { client in client.subscribe(to: channel).sink { event in events.update { $0.append(event) } } }
        return events
    }

    /// Runs `make` on the loop and keeps the subscription it returns until ``stop()``;
    /// returns its index for ``cancel(_:)``.
    @discardableResult
    func keep(_ make: @escaping @Sendable (RedisClient) -> AnyCancellable) async throws -> Int {
        let client = self.client
        let kept = self.kept
        return try await thread.run { _ in
            kept.value.cancellables.append(make(client.value))
            return kept.value.cancellables.count - 1
        }
    }

    func cancel(_ index: Int) async throws {
        let kept = self.kept
        try await thread.run { _ in kept.value.cancellables[index].cancel() }
    }

    /// Runs `body` with the client on its loop.
    func run<Result: Sendable>(_ body: @escaping @Sendable (RedisClient) -> Result) async throws -> Result {
        let client = self.client
        return try await thread.run { _ in body(client.value) }
    }

    func stop() async {
        let client = self.client
        let kept = self.kept
        await thread.stop {
            kept.release()
            client.release()
        }
    }
}

extension Result where Failure == RedisError {
    /// The failure's kind, or nil for a success.
    var failureKind: RedisError.Kind? {
        if case .failure(let error) = self { return error.kind }
        return nil
    }
}
