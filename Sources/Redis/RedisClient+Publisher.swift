public import EventLoop
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
    public func publisher(for command: RedisCommand) -> OneResultPublisher<RedisReply, RedisError> {
        OneResultPublisher { [self] finish in send(command, completion: finish) }
    }
}

extension RedisCall: Cancellable {}
