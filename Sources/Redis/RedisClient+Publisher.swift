public import OpenCombine

extension RedisClient {
    /// A publisher of one command: sent when a subscriber requests a value, it emits the
    /// reply and finishes, or fails with ``RedisError``. Cancelling drops interest in the
    /// reply (Redis still runs a command already sent; its reply is discarded).
    ///
    /// ```
    /// subscribe ──request(1)──▶ send ──────────▶ reply ─|
    ///                                 cancel ──▶ reply discarded on arrival
    /// ```
    ///
    /// ```swift
    /// redis.publisher(for: RedisCommand("GET", "snapshot:groups"))
    ///     .compactMap(\.bytes)
    ///     .map(decodeSnapshot)
    /// ```
    public func publisher(for command: RedisCommand) -> CommandPublisher {
        CommandPublisher(client: self, command: command)
    }

    /// See ``RedisClient/publisher(for:)``.
    public struct CommandPublisher: Publisher {
        public typealias Output = RedisReply
        public typealias Failure = RedisError

        let client: RedisClient
        public let command: RedisCommand

        public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Output, Downstream.Failure == Failure {
            subscriber.receive(subscription: CommandSubscription(client: client, command: command, downstream: subscriber))
        }
    }
}

/// Sends the command on the first demand; loop-confined like the client.
private final class CommandSubscription<Downstream: Subscriber>: Subscription
where Downstream.Input == RedisReply, Downstream.Failure == RedisError {
    private let client: RedisClient
    private let command: RedisCommand
    private var downstream: Downstream?
    private var call: RedisCall?

    init(client: RedisClient, command: RedisCommand, downstream: Downstream) {
        self.client = client
        self.command = command
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, call == nil, downstream != nil else { return }
        call = client.send(command) { [self] result in
            guard let downstream else { return }
            self.downstream = nil
            call = nil
            switch result {
            case .success(let reply):
                _ = downstream.receive(reply)
                downstream.receive(completion: .finished)
            case .failure(let error):
                downstream.receive(completion: .failure(error))
            }
        }
    }

    func cancel() {
        downstream = nil
        call?.cancel()
        call = nil
    }
}
