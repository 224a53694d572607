import EventLoop

/// One command sent through a ``RedisClient``, from sending until its completion handler ran
/// (reply, deadline, lost connection) or it was cancelled. Loop-confined.
///
/// ``cancel()`` drops interest in the reply: the completion handler is not called. Redis
/// still answers (a sent command cannot be taken back); the reply is discarded on arrival,
/// in its place in the connection's order.
///
/// ```swift
/// let call = client.send(RedisCommand("GET", "k")) { result in … }
/// call.cancel()
/// ```
public final class RedisCall {
    /// The command as sent.
    public let command: RedisCommand
    private var completion: ((Result<RedisReply, RedisError>) -> Void)?
    private var deadline: LoopTimer?

    init(command: RedisCommand, completion: @escaping (Result<RedisReply, RedisError>) -> Void) {
        self.command = command
        self.completion = completion
    }

    /// Whether the call has ended: completed, timed out, failed or cancelled.
    public var isFinished: Bool { completion == nil }

    /// Cancels the call; its completion handler is not called. Does nothing once finished.
    public func cancel() {
        abandon()
    }

    /// Fails the call with ``RedisError/Kind/timeout`` after `timeout` unless it ended before.
    func startDeadline(loop: EventLoop, after timeout: Duration) {
        let deadline = LoopTimer(loop: loop) { [unowned self] in
            // Held for the whole call: completing drops the timer, which holds this closure.
            let call = self
            call.complete(.failure(RedisError(.timeout, "no reply to \(call.command.name) within \(timeout)")))
        }
        deadline.schedule(after: timeout)
        self.deadline = deadline
    }

    /// Runs the completion handler, once; later results (a reply after the deadline) are dropped.
    func complete(_ result: Result<RedisReply, RedisError>) {
        guard let completion else { return }
        abandon()
        completion(result)
    }

    /// Ends the call without running its completion handler.
    func abandon() {
        completion = nil
        deadline?.cancel()
        deadline = nil
    }
}
