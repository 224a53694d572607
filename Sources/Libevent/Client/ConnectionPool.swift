/// The keep-alive connections to one origin, at most `capacity` of them, and the calls
/// waiting for one (first come, first served). Loop-confined.
///
/// ```
/// enqueue(call) ─▶ idle connection?  ─yes─▶ dispatch
///                      │ no
///                  below capacity?   ─yes─▶ new connection ─▶ dispatch
///                      │ no
///                  wait in line ◀── checkIn(connection) dispatches the next live waiter
/// ```
final class ConnectionPool {
    let origin: BaseURL.Origin
    let capacity: Int
    private unowned let client: UpstreamClient
    private var idle: [UpstreamConnection] = []
    private var openCount = 0
    /// Waiting calls; cancelled ones are skipped when their turn comes.
    private var waiting: [UpstreamCall] = []
    private var waitingHead = 0
    /// Calls on a connection now.
    private var active: [ObjectIdentifier: UpstreamCall] = [:]

    init(origin: BaseURL.Origin, capacity: Int, client: UpstreamClient) {
        self.origin = origin
        self.capacity = max(1, capacity)
        self.client = client
    }

    /// Connections open or in use.
    var connectionCount: Int { openCount }
    var idleCount: Int { idle.count }

    func enqueue(_ call: UpstreamCall) {
        if let connection = checkOut() {
            dispatch(call, on: connection)
        } else {
            waiting.append(call)
        }
    }

    /// Takes back a connection after `call` ended; a connection that cannot be reused
    /// is freed on a later loop turn (this may run inside its own libevent callback).
    func checkIn(_ connection: UpstreamConnection, from call: UpstreamCall, reusable: Bool) {
        active[ObjectIdentifier(call)] = nil
        if reusable && connection.isReusable {
            idle.append(connection)
        } else {
            openCount -= 1
            client.loop.deferred { withExtendedLifetime(connection) {} }
        }
        dispatchWaiting()
    }

    private func checkOut() -> UpstreamConnection? {
        while let connection = idle.popLast() {
            if connection.isReusable { return connection }
            openCount -= 1
            client.loop.deferred { withExtendedLifetime(connection) {} }
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
            dispatch(call, on: connection)
        }
    }

    private func dispatch(_ call: UpstreamCall, on connection: UpstreamConnection) {
        active[ObjectIdentifier(call)] = call
        call.dispatch(on: connection)
    }

    /// Cancels every call, queued or on a connection (the client is going away).
    func cancelAll() {
        let calls = waiting[waitingHead...] + active.values
        waiting.removeAll()
        waitingHead = 0
        for call in calls { call.cancel() }
    }

    private func advanceWaiting() {
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
    }
}
