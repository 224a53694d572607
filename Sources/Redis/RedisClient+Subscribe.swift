public import OpenCombine

extension RedisClient {
    /// A publisher of one channel's events: ``RedisChannelEvent/subscribed`` when Redis has
    /// confirmed the subscription (and again after each reconnect), then each message's
    /// payload. It never completes; cancelling unsubscribes, and the last subscriber of a
    /// channel leaving sends `UNSUBSCRIBE`. Several subscribers of one channel share one
    /// `SUBSCRIBE` on the client's pub/sub connection.
    ///
    /// Messages are delivered while the subscriber has demand and dropped otherwise (Redis
    /// pub/sub is fire-and-forget: request `.unlimited`, or put a `buffer` in front); a
    /// pending `.subscribed` waits for demand.
    ///
    /// ```
    /// subscribe ──▶ SUBSCRIBE ch ──▶ subscribed ──▶ message ──▶ message ── cancel ──▶ UNSUBSCRIBE ch
    /// ```
    ///
    /// ```swift
    /// redis.subscribe(to: "stream:\(id):control")
    ///     .compactMap(\.payload)
    ///     .sink { command in stream.apply(command) }
    /// ```
    public func subscribe(to channel: String) -> ChannelPublisher {
        ChannelPublisher(client: self, channel: channel)
    }

    /// See ``RedisClient/subscribe(to:)``.
    public struct ChannelPublisher: Publisher {
        public typealias Output = RedisChannelEvent
        public typealias Failure = Never

        let client: RedisClient
        public let channel: String

        public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Output, Downstream.Failure == Failure {
            subscriber.receive(subscription: ChannelSubscription(client: client, channel: Array(channel.utf8), downstream: subscriber))
        }
    }
}

/// Joins the channel on the first demand and leaves it on cancel; holds the client until
/// then. Loop-confined.
private final class ChannelSubscription<Downstream: Subscriber>: Subscription, ChannelListener
where Downstream.Input == RedisChannelEvent, Downstream.Failure == Never {
    private var client: RedisClient?
    private let channel: [UInt8]
    private var downstream: Downstream?
    private var demand = Subscribers.Demand.none
    private var isListening = false
    /// A `.subscribed` that came while there was no demand.
    private var subscribedPending = false

    init(client: RedisClient, channel: [UInt8], downstream: Downstream) {
        self.client = client
        self.channel = channel
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, let client, downstream != nil else { return }
        self.demand += demand
        if !isListening {
            isListening = true
            client.channels.add(self, to: channel)
        } else if subscribedPending {
            subscribedPending = false
            receive(.subscribed)
        }
    }

    func cancel() {
        downstream = nil
        guard let client else { return }
        self.client = nil
        if isListening { client.channels.remove(self, from: channel) }
    }

    func receive(_ event: RedisChannelEvent) {
        guard let downstream else { return }
        guard demand > 0 else {
            if event == .subscribed { subscribedPending = true }
            return
        }
        demand -= 1
        demand += downstream.receive(event)
    }
}
