/// The keep-alive connections to one origin, at most `capacity` of them, and the calls
/// waiting for one (first come, first served, at most `maxQueue` of them). Loop-confined.
///
/// ```
/// enqueue(call) ─▶ idle connection?  ─yes─▶ dispatch
///                      │ no
///                  below capacity?   ─yes─▶ new connection ─▶ dispatch
///                      │ no
///                  line full?        ─yes─▶ fail at once (saturated)
///                      │ no
///                  wait in line ◀── checkIn(connection) dispatches the next live waiter
/// ```
///
/// A call that leaves the line early (cancelled, timed out) is withdrawn from the count at
/// once and its slot is compacted away soon after, so a saturated pool whose callers give up
/// holds no more than `maxQueue` calls, however long the saturation lasts.
final class ConnectionPool {
    let origin: BaseURL.Origin
    private(set) var capacity: Int
    private(set) var maxQueue: Int
    /// Unowned: the client owns its pools. A pool outlives it only inside a job that returns
    /// a connection, when nothing waits in its line any more.
    unowned let client: UpstreamClient
    let loop: EventLoop
    private var idle: [UpstreamConnection] = []
    private var openCount = 0
    /// The line: live calls and the slots of withdrawn ones, oldest first from `waitingHead`.
    private var waiting: [UpstreamCall] = []
    private var waitingHead = 0
    /// Calls in the line that still wait (the rest of it are withdrawn slots).
    private var queuedCount = 0
    /// Calls on a connection now.
    private var active: [ObjectIdentifier: UpstreamCall] = [:]

    init(origin: BaseURL.Origin, capacity: Int, maxQueue: Int, client: UpstreamClient) {
        self.origin = origin
        self.capacity = max(1, capacity)
        self.maxQueue = max(0, maxQueue)
        self.client = client
        loop = client.loop
    }

    /// Takes up new limits (a configuration reload): more room dispatches waiting calls at
    /// once; less closes idle connections beyond it now and busy ones as they come back. Calls
    /// already waiting stay in line even beyond a smaller `maxQueue`.
    func setLimits(capacity: Int, maxQueue: Int) {
        self.capacity = max(1, capacity)
        self.maxQueue = max(0, maxQueue)
        while openCount > self.capacity, let connection = idle.popLast() {
            openCount -= 1
            loop.deferred { withExtendedLifetime(connection) {} }
        }
        dispatchWaiting()
    }

    /// Connections open or in use.
    var connectionCount: Int { openCount }
    var idleCount: Int { idle.count }
    /// Calls waiting for a connection.
    var waitingCount: Int { queuedCount }
    /// Slots the line holds: waiting calls and those of calls that left, not compacted yet.
    var slotCount: Int { waiting.count - waitingHead }

    func enqueue(_ call: UpstreamCall) {
        if let connection = checkOut() {
            dispatch(call, on: connection)
        } else if queuedCount >= maxQueue {
            call.refuse(.saturated, "\(maxQueue) calls already wait for one of \(capacity) connections to \(origin)")
        } else {
            waiting.append(call)
            queuedCount += 1
        }
    }

    /// A waiting call left the line (cancelled or timed out); its slot is skipped.
    func withdraw(_ call: UpstreamCall) {
        queuedCount -= 1
        let withdrawn = waiting.count - waitingHead - queuedCount
        if withdrawn > 64 && withdrawn > queuedCount {
            waiting = waiting[waitingHead...].filter(\.isQueued)
            waitingHead = 0
        }
    }

    /// Takes back a connection after `call` ended; a connection that cannot be reused
    /// is freed on a later loop turn (this may run inside its own libevent callback).
    func checkIn(_ connection: UpstreamConnection, from call: UpstreamCall, reusable: Bool) {
        active[ObjectIdentifier(call)] = nil
        if reusable && connection.isReusable && openCount <= capacity {
            idle.append(connection)
        } else {
            openCount -= 1
            loop.deferred { withExtendedLifetime(connection) {} }
        }
        dispatchWaiting()
    }

    private func checkOut() -> UpstreamConnection? {
        while let connection = idle.popLast() {
            if connection.isReusable { return connection }
            openCount -= 1
            loop.deferred { withExtendedLifetime(connection) {} }
        }
        guard openCount < capacity, let connection = client.makeConnection(to: origin) else { return nil }
        openCount += 1
        return connection
    }

    private func dispatchWaiting() {
        while waitingHead < waiting.count {
            let call = waiting[waitingHead]
            guard call.isQueued else {
                advanceWaiting()
                continue
            }
            guard let connection = checkOut() else { return }
            advanceWaiting()
            queuedCount -= 1
            dispatch(call, on: connection)
        }
    }

    private func dispatch(_ call: UpstreamCall, on connection: UpstreamConnection) {
        active[ObjectIdentifier(call)] = call
        call.dispatch(on: connection)
    }

    /// Cancels every call, queued or on a connection (the client is going away).
    func cancelAll() {
        let calls = Array(waiting[waitingHead...]) + Array(active.values)
        for call in calls { call.cancel() }
        waiting.removeAll()
        waitingHead = 0
        queuedCount = 0
    }

    private func advanceWaiting() {
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
    }
}
