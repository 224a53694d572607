internal import CHiredis
internal import CHiredisLibevent
import EventLoop

/// One hiredis `redisAsyncContext`, attached to an ``EventLoop`` through hiredis' libevent
/// adapter: one TCP connection, one attempt, no reconnecting (``RedisLink`` does that).
/// Loop-confined.
///
/// Who frees the context, and when (hiredis 0.14's `async.c`):
/// - hiredis frees it itself when connecting fails (after `onConnect(REDIS_ERR)`) or the
///   connection breaks (pending reply callbacks get NULL, then `onDisconnect`): the event
///   ``Event/closed(_:)`` says so and this object forgets the pointer.
/// - Otherwise ``close(failing:)`` or `deinit` calls `redisAsyncFree`, but never inside one
///   of this context's own callbacks: from a reply callback hiredis would postpone the free,
///   but from `onConnect`/`onDisconnect` it would free memory its caller still reads. Inside a
///   callback the free waits for the next loop turn (the closure keeps this object alive).
///   `ac->data` is cleared first, so the callbacks `redisAsyncFree` runs find nobody.
///
/// Replies arrive in command order, so the C side carries no per-command context: the
/// context's `data` is this object (unretained: the context never outlives it), and each
/// reply completes the oldest ``RedisCall`` still waiting. A call that timed out or was
/// cancelled keeps its place; its late reply is dropped.
///
/// ```
/// init ──▶ connect(2) in progress ──onConnect──▶ .connected ──▶ send / sendPubSub ──▶ replies
///                 │ refused                                         │ EOF, error
///                 └──────────────▶ .closed(error) ◀─────────────────┘
/// ```
final class RedisConnection {
    typealias Context = UnsafeMutablePointer<redisAsyncContext>

    enum Event {
        /// The TCP connection is up; commands may be sent.
        case connected
        /// hiredis has freed the context: connecting failed, or the connection broke. Calls
        /// still waiting have already failed with ``RedisError/Kind/connectionLost``.
        case closed(RedisError)
        /// A pub/sub reply: a (un)subscribe confirmation or a message.
        case pushed(RedisReply)
    }

    let loop: EventLoop
    private var context: Context?
    private var onEvent: ((Event) -> Void)?
    /// Calls waiting for a reply, oldest first (from `waitingHead` on); before it, answered
    /// calls not compacted away yet (see ``popWaiting()``).
    private var waiting: [RedisCall] = []
    private var waitingHead = 0
    /// How many of this context's callbacks are running now (one, or more when a callback
    /// sends a command that hiredis answers at once with an error).
    private var callbackDepth = 0

    /// Starts connecting to `address` (an IP address: hiredis resolves names with a blocking
    /// `getaddrinfo`, so ``RedisLink`` resolves them first). Throws when the attempt fails at once.
    init(loop: EventLoop, address: String, port: UInt16, onEvent: @escaping (Event) -> Void) throws(RedisError) {
        let context = try Self.open(address: address, port: port, base: loop.base)
        self.loop = loop
        self.context = context
        self.onEvent = onEvent
        context.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        freeContext()
    }

    /// Whether ``close(failing:)`` was called or hiredis closed the connection.
    var isClosed: Bool { onEvent == nil }

    /// Slots of the waiting line, answered calls not compacted yet included: what the line
    /// costs in memory (at most twice the calls waiting, or 16 more than them).
    var waitingSlots: Int { waiting.count }

    /// Sends `call`'s command; the call completes with the reply. A closed connection, or one
    /// hiredis is tearing down, fails it with ``RedisError/Kind/unavailable``.
    func send(_ call: RedisCall) {
        guard let context, !isClosed else {
            call.complete(.failure(RedisError(.unavailable, "connection closed")))
            return
        }
        do {
            try Self.withArguments(call.command.arguments) { count, arguments, lengths throws(RedisError) in
                try RedisError.check(
                    redisAsyncCommandArgv(context, Self.replyCallback, nil, count, arguments, lengths),
                    .unavailable, "redisAsyncCommandArgv")
            }
            waiting.append(call)
        } catch {
            call.complete(.failure(error))
        }
    }

    /// Sends `SUBSCRIBE` or `UNSUBSCRIBE` with its channels; the replies arrive as
    /// ``Event/pushed(_:)``. False when hiredis refused it (closing, or `UNSUBSCRIBE` with no
    /// subscription).
    func sendPubSub(_ arguments: [[UInt8]]) -> Bool {
        guard let context, !isClosed else { return false }
        do {
            try Self.withArguments(arguments) { count, arguments, lengths throws(RedisError) in
                try RedisError.check(
                    redisAsyncCommandArgv(context, Self.pushCallback, nil, count, arguments, lengths),
                    .unavailable, "redisAsyncCommandArgv")
            }
            return true
        } catch {
            return false
        }
    }

    /// Ends the connection: calls still waiting fail with `error`, or, when it is nil, are
    /// dropped without running their completion handlers; no more events. The context is
    /// freed now, or on the next loop turn when this runs inside one of its callbacks.
    func close(failing error: RedisError?) {
        onEvent = nil
        endWaitingCalls(error)
        guard context != nil else { return }
        if callbackDepth > 0 {
            loop.deferred { [self] in freeContext() }
        } else {
            freeContext()
        }
    }

    // MARK: - hiredis

    /// Connects and attaches a new context to `base`, or throws (and frees it).
    private static func open(address: String, port: UInt16, base: OpaquePointer) throws(RedisError) -> Context {
        guard let context = redisAsyncConnect(address, Int32(port)) else {
            throw RedisError(.connectFailed, "redisAsyncConnect: out of memory")
        }
        do throws(RedisError) {
            guard context.pointee.err == 0 else {
                throw RedisError(.connectFailed, "\(address):\(port): \(errorText(context))")
            }
            try RedisError.check(tributary_redis_libevent_attach(context, base), .connectFailed, "redisLibeventAttach")
            try RedisError.check(redisAsyncSetConnectCallback(context, connectCallback), .connectFailed, "redisAsyncSetConnectCallback")
            try RedisError.check(redisAsyncSetDisconnectCallback(context, disconnectCallback), .connectFailed, "redisAsyncSetDisconnectCallback")
            // A peer that vanishes without a FIN (host down, cable cut) is noticed by the
            // kernel's keepalive probes after ~30 s, on the pub/sub connection too, which has
            // no other health check.
            try RedisError.check(redisEnableKeepAlive(&context.pointee.c), .connectFailed, "redisEnableKeepAlive")
        } catch {
            redisAsyncFree(context)
            throw error
        }
        return context
    }

    private static func errorText(_ context: UnsafePointer<redisAsyncContext>) -> String {
        guard let text = context.pointee.errstr, text.pointee != 0 else { return "connection closed" }
        return String(cString: text)
    }

    /// Calls `body` with hiredis' `argc`, `argv`, `argvlen` for `arguments`, laid out in one
    /// buffer (never empty, so every pointer is valid even for empty arguments).
    private static func withArguments(
        _ arguments: [[UInt8]],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) throws(RedisError) -> Void
    ) throws(RedisError) {
        var joined: [UInt8] = []
        joined.reserveCapacity(arguments.reduce(1) { $0 + $1.count })
        for argument in arguments { joined.append(contentsOf: argument) }
        joined.append(0)
        let lengths = arguments.map(\.count)
        let result: Result<Void, RedisError> = joined.withUnsafeBytes { bytes in
            let base = bytes.baseAddress!.assumingMemoryBound(to: CChar.self)
            var offset = 0
            var pointers: [UnsafePointer<CChar>?] = lengths.map { length in
                defer { offset += length }
                return base + offset
            }
            return pointers.withUnsafeMutableBufferPointer { pointers in
                Result { () throws(RedisError) in try body(Int32(arguments.count), pointers.baseAddress!, lengths) }
            }
        }
        try result.get()
    }

    private func freeContext() {
        guard let context else { return }
        self.context = nil
        context.pointee.data = nil
        redisAsyncFree(context)
    }

    // MARK: - Callbacks

    /// Runs `body` with the connection a context's `data` names, counting the callback; does
    /// nothing for a context being freed by ``close(failing:)`` (its `data` is cleared).
    private static func withConnection(_ context: UnsafePointer<redisAsyncContext>?, _ body: (RedisConnection) -> Void) {
        guard let data = context?.pointee.data else { return }
        let connection = Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
        connection.callbackDepth += 1
        body(connection)
        connection.callbackDepth -= 1
    }

    private static let connectCallback: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { context, status in
        withConnection(context) { connection in
            if status == REDIS_OK {
                connection.onEvent?(.connected)
            } else {
                connection.closedByHiredis(RedisError(.connectFailed, errorText(context!)))
            }
        }
    }

    private static let disconnectCallback: @convention(c) (UnsafePointer<redisAsyncContext>?, Int32) -> Void = { context, _ in
        withConnection(context) { connection in
            connection.closedByHiredis(RedisError(.connectionLost, errorText(context!)))
        }
    }

    private static let replyCallback: @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { context, reply, _ in
        withConnection(context) { connection in
            connection.replyArrived(reply?.assumingMemoryBound(to: redisReply.self), context: context!)
        }
    }

    private static let pushCallback: @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { context, reply, _ in
        // NULL: the context is being freed; `onDisconnect` follows and reports it.
        guard let reply else { return }
        withConnection(context) { connection in
            connection.onEvent?(.pushed(RedisReply(reply.assumingMemoryBound(to: redisReply.self))))
        }
    }

    /// A reply, or NULL when hiredis is freeing the context with this command unanswered.
    private func replyArrived(_ reply: UnsafePointer<redisReply>?, context: Context) {
        guard let call = popWaiting(), !call.isFinished else { return }
        if let reply {
            call.complete(.success(RedisReply(reply)))
        } else {
            call.complete(.failure(RedisError(.connectionLost, Self.errorText(context))))
        }
    }

    /// hiredis frees the context when this callback returns.
    private func closedByHiredis(_ error: RedisError) {
        context?.pointee.data = nil
        context = nil
        let onEvent = self.onEvent
        self.onEvent = nil
        endWaitingCalls(RedisError(.connectionLost, error.detail))
        onEvent?(.closed(error))
    }

    private func endWaitingCalls(_ error: RedisError?) {
        while let call = popWaiting() {
            if let error { call.complete(.failure(error)) } else { call.abandon() }
        }
    }

    /// The oldest call waiting, taken out of the line. The line is emptied when its last call
    /// is answered, and, while commands stay outstanding (a steady stream of them never lets
    /// it empty), compacted once the answered calls before its head are as many as those
    /// waiting: otherwise it grew by a slot, holding its answered call, for every command.
    private func popWaiting() -> RedisCall? {
        guard waitingHead < waiting.count else { return nil }
        let call = waiting[waitingHead]
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count <= 1024)
            waitingHead = 0
        } else if waitingHead >= 16 && waitingHead * 2 >= waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
        return call
    }
}
