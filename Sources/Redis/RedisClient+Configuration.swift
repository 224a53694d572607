extension RedisClient {
    /// Deadlines and reconnecting. The defaults suit a fleet whose leases last seconds: no
    /// Redis call may hold a worker's pipeline longer than about a second.
    ///
    /// ```swift
    /// var configuration = RedisClient.Configuration()
    /// configuration.commandTimeout = .milliseconds(250)
    /// configuration.reconnectDelay = .milliseconds(50) ... .seconds(2)
    /// ```
    public struct Configuration: Sendable {
        /// A command's deadline unless it names its own (``RedisCommand/timeout``).
        public var commandTimeout: Duration
        /// How long one connection attempt may take: resolving, TCP connect, `AUTH`,
        /// `SELECT` and a `PING` answered.
        public var connectTimeout: Duration
        /// The wait before reconnecting: the lower bound after a lost connection, doubling
        /// after each failed attempt up to the upper bound, back to the lower bound once
        /// connected.
        public var reconnectDelay: ClosedRange<Duration>
        /// How often the command connection is probed with a `PING` (answered within
        /// ``commandTimeout``, or both connections are dropped and remade): a Redis that hangs
        /// or a silently dead network path turns the client ``State/disconnected`` instead of
        /// leaving it connected in name. nil: no probing.
        public var healthCheckInterval: Duration?

        public init(
            commandTimeout: Duration = .seconds(1), connectTimeout: Duration = .seconds(2),
            reconnectDelay: ClosedRange<Duration> = .milliseconds(100) ... .seconds(5),
            healthCheckInterval: Duration? = .seconds(1)
        ) {
            self.commandTimeout = commandTimeout
            self.connectTimeout = connectTimeout
            self.reconnectDelay = reconnectDelay
            self.healthCheckInterval = healthCheckInterval
        }
    }
}
