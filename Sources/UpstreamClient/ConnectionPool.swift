import Glibc
import EventLoop

/// One loop's keep-alive connections to one origin, at most `capacity` of them and within the
/// origin's ``ConnectionBudget`` (shared with the other workers' pools, or the pool's own), and
/// the calls waiting for one (first come, first served, at most `maxQueue` of them).
/// Loop-confined, except the budget's nudges, which arrive through ``EventLoop/execute(_:)``.
///
/// ```
/// enqueue(call) ─▶ idle connection?  ─yes─▶ dispatch
///                      │ no
///                  below capacity,
///                  budget left?      ─yes─▶ new connection ─▶ dispatch
///                      │ no
///                  line full?        ─yes─▶ fail at once (saturated)
///                      │ no
///                  wait in line ◀── checkIn(connection) dispatches the next live waiter
///                      (starving: the other pools are asked to give connections back,
///                       their idle sockets come over to this loop, and a connection
///                       given back anywhere wakes this pool)
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
    private var idle: [any UpstreamConnection] = []
    private var openCount = 0
    /// The line: live calls and the slots of withdrawn ones, oldest first from `waitingHead`.
    private var waiting: [UpstreamCall] = []
    private var waitingHead = 0
    /// Calls in the line that still wait (the rest of it are withdrawn slots).
    private var queuedCount = 0
    /// Calls on a connection now, each knowing its place (``UpstreamCall/activeIndex``): an
    /// array with swap-removal instead of a dictionary saves a hash insertion and removal
    /// per call.
    private var active: [UpstreamCall] = []
    /// The connections all pools of this origin may hold together.
    private let budget: ConnectionBudget
    private var member: ConnectionBudget.Member!
    /// The demand this pool last added to the budget's total (see ``publishDemand()``).
    private var publishedDemand = 0
    /// Whether its origin is no longer configured (``startRetiring()``).
    private(set) var isRetiring = false

    /// `budget`: shared with the other loops' pools for `origin` (nil: a budget of its own).
    init(origin: BaseURL.Origin, capacity: Int, maxQueue: Int, budget: ConnectionBudget?, client: UpstreamClient) {
        self.origin = origin
        self.capacity = max(1, capacity)
        self.maxQueue = max(0, maxQueue)
        self.client = client
        loop = client.loop
        self.budget = budget ?? ConnectionBudget()
        self.budget.setLimit(self.capacity)
        member = ConnectionBudget.Member(pool: self)
        self.budget.join(member)
    }

    deinit {
        budget.leave(member, holding: openCount, demand: publishedDemand)
    }

    /// The client lets the pool go (after ``cancelAll()``): the budget's nudges no longer reach
    /// it, and its member's reference to it no longer keeps it alive. It leaves the budget
    /// as it is freed, its idle sockets closed with it.
    func retire() {
        member.pool = nil
    }

    /// Its origin is no longer configured (a configuration reload removed the upstreams that
    /// called it; the client no longer hands it calls): its idle connections close now, and
    /// each one in use closes as its call ends, instead of going back to the idle list. Calls
    /// already here go on; when none is left the client lets the pool go
    /// (``UpstreamClient/retiredPoolIsIdle(_:)``).
    func startRetiring() {
        isRetiring = true
        while let connection = idle.popLast() { close(connection) }
    }

    /// Whether calls wait in its line or are on one of its connections.
    var hasCalls: Bool { queuedCount > 0 || !active.isEmpty }

    /// A call of a retiring pool ended: with none left, the client may let the pool go.
    private func retiringCallEnded() {
        guard !hasCalls else { return }
        client.retiredPoolIsIdle(self)
    }

    /// Takes up new limits (a configuration reload; `capacity` is the budget's new limit too):
    /// more room dispatches waiting calls at once; less closes idle connections beyond it now
    /// and busy ones as they come back. Calls already waiting stay in line even beyond a
    /// smaller `maxQueue`.
    func setLimits(capacity: Int, maxQueue: Int) {
        self.capacity = max(1, capacity)
        self.maxQueue = max(0, maxQueue)
        budget.setLimit(self.capacity)
        while openCount > self.capacity || budget.isOverLimit, let connection = idle.popLast() {
            close(connection)
        }
        dispatchWaiting(at: .now)
    }

    /// Connections open or in use.
    var connectionCount: Int { openCount }
    var idleCount: Int { idle.count }
    /// Calls waiting for a connection.
    var waitingCount: Int { queuedCount }
    /// Slots the line holds: waiting calls and those of calls that left, not compacted yet.
    var slotCount: Int { waiting.count - waitingHead }

    /// Dispatches `call` or puts it in line; `now`: a clock reading the caller took just before.
    func enqueue(_ call: UpstreamCall, at now: MonotonicInstant) {
        if let connection = checkOut(at: now) {
            dispatch(call, on: connection)
        } else if queuedCount >= maxQueue {
            call.refuse(.saturated, "\(maxQueue) calls already wait for one of \(capacity) connections to \(origin)")
        } else {
            waiting.append(call)
            queuedCount += 1
            if openCount < capacity && budget.starve(member) { dispatchWaiting(at: now) }
            if budget.isContended { publishDemand() }
        }
    }

    /// A waiting call left the line (cancelled or timed out); its slot is skipped.
    func withdraw(_ call: UpstreamCall) {
        queuedCount -= 1
        if queuedCount == 0 { budget.fed(member) }
        let withdrawn = waiting.count - waitingHead - queuedCount
        if withdrawn > 64 && withdrawn > queuedCount {
            waiting = waiting[waitingHead...].filter(\.isQueued)
            waitingHead = 0
        }
        if isRetiring { retiringCallEnded() }
    }

    /// Takes back a connection after `call` ended at `now`; a connection that cannot be reused
    /// is freed on a later loop turn (this may run inside its own libevent callback).
    func checkIn(_ connection: any UpstreamConnection, from call: UpstreamCall, reusable: Bool, at now: MonotonicInstant) {
        removeActive(call)
        if budget.isContended { publishDemand() }
        let keepable = reusable && !isRetiring && connection.isReusable(at: now) && openCount <= capacity && !budget.isOverLimit
        if keepable && !owesConnection(keeping: true) {
            idle.append(connection)
        } else if keepable {
            lend(connection)
        } else {
            close(connection)
        }
        dispatchWaiting(at: now)
        if isRetiring { retiringCallEnded() }
    }

    /// Whether another pool starves and this one should give it a connection rather than
    /// keep one (`keeping`: a connection it has; otherwise one it would open): when it holds
    /// more than its share (``ConnectionBudget/share(forDemand:)``) by a quarter of the
    /// capacity. Shares follow the demands call by call, and demands swing with every burst of
    /// calls: without that slack, connections close and open back and forth. At N=10 under
    /// `wrk -c64` with two workers, a slack of an eighth (and closing whatever came back while
    /// the pool's line was empty for a moment) opened 1.1 connections per request in one run;
    /// with a quarter and demands counted up to the capacity, 0.2 to 0.6 over six runs
    /// (`strace -c`; it varies with how the kernel spreads wrk's connections over the
    /// workers), and the CPU per request fell by a sixth.
    private func owesConnection(keeping: Bool) -> Bool {
        guard budget.othersStarve(than: member) else { return false }
        publishDemand()
        let share = budget.share(forDemand: publishedDemand)
        guard keeping else { return openCount >= share }
        // No pool keeps the whole budget: a small one, where share and slack reach the limit,
        // would otherwise never lend.
        return openCount > min(share + max(1, capacity / 4), budget.limit - 1)
    }

    /// Tells the budget how many calls this pool has (waiting or on a connection), when that
    /// changed: one atomic addition, made only while some pool starves (shares are computed
    /// then) or when the pool has no call left (a stale demand would shrink the others' share).
    private func publishDemand() {
        let demand = currentDemand
        guard demand != publishedDemand else { return }
        budget.addDemand(demand - publishedDemand)
        publishedDemand = demand
    }

    /// Calls waiting or on a connection, counted up to the capacity: a pool can use no more
    /// connections than that, and beyond it the count only swings with bursts of calls. Two
    /// busy workers then share the budget evenly and steadily, instead of following each
    /// burst by closing connections and opening them again.
    private var currentDemand: Int { min(queuedCount + active.count, capacity) }

    /// Another pool of the origin starves: idle connections here that can no longer carry a
    /// call, and those beyond this pool's share, are given back to the budget (all of them
    /// when it has no calls). A busy pool keeps its share: it would open them again for its
    /// next calls.
    func lendIdle() {
        // Idle connections the upstream closed first: they hold budget and carry nothing.
        var usable: [any UpstreamConnection] = []
        let now = MonotonicInstant.now
        for connection in idle {
            if connection.isReusable(at: now) { usable.append(connection) } else { close(connection) }
        }
        idle = usable
        let demand = currentDemand
        let share = demand == 0 ? 0 : budget.share(forDemand: demand)
        while openCount > share, let connection = idle.popLast() { lend(connection) }
    }

    /// Gives an idle `connection` this pool owes to a starving pool on another loop, socket and
    /// budget place together: it carries that pool's calls from its next loop turn, instead of
    /// closing here while the other opens one (a TCP handshake, a close and a TIME_WAIT for a
    /// connection that was fine; with two busy workers at N=10, 0.2 to 0.6 of them per
    /// request). Closes it when no other pool starves or it cannot move (HTTPS).
    private func lend(_ connection: any UpstreamConnection) {
        guard let borrower = budget.starvingMember(besides: member), let socket = connection.detachSocket() else {
            close(connection)
            return
        }
        openCount -= 1
        discard(connection)
        let lent = LentConnection(socket, budget: budget)
        borrower.loop.execute { borrower.pool?.adopt(lent) }
    }

    /// Takes a connection another loop's pool lent (``lend(_:)``), with its place in the
    /// budget, and puts it to work. Without room for it here, it is dropped: closed, and its
    /// place given back.
    func adopt(_ lent: LentConnection) {
        guard !isRetiring, openCount < capacity, !budget.isOverLimit, let socket = lent.take() else { return }
        openCount += 1
        idle.append(client.adoptConnection(socket, to: origin))
        dispatchWaiting(at: .now)
    }

    /// A connection was given back to the budget while this pool starved: takes it if it can.
    func budgetFreed() {
        dispatchWaiting(at: .now)
    }

    /// Frees `connection` on a later loop turn (this may run inside its own libevent
    /// callback), then gives its place back to the budget: the socket is closed before
    /// another pool may open one in its place.
    private func close(_ connection: any UpstreamConnection) {
        openCount -= 1
        let budget = self.budget
        discard(connection) { budget.giveBack() }
    }

    /// Frees `connection` on a later loop turn (this may run inside its own libevent callback),
    /// then runs `then`.
    private func discard(_ connection: any UpstreamConnection, then: @escaping () -> Void = {}) {
        var discarding: (any UpstreamConnection)? = connection
        loop.deferred {
            discarding = nil
            then()
        }
        _ = discarding
    }

    /// An idle connection still reusable at `now`, or a new one when the limits allow.
    private func checkOut(at now: MonotonicInstant) -> (any UpstreamConnection)? {
        while let connection = idle.popLast() {
            if connection.isReusable(at: now) { return connection }
            close(connection)
        }
        guard openCount < capacity, !owesConnection(keeping: false), budget.take() else { return nil }
        guard let connection = client.makeConnection(to: origin) else {
            budget.giveBack()
            return nil
        }
        openCount += 1
        return connection
    }

    /// Dispatches the waiting calls while connections are to be had; `now`: a clock reading
    /// the caller took just before.
    private func dispatchWaiting(at now: MonotonicInstant) {
        while waitingHead < waiting.count {
            let call = waiting[waitingHead]
            guard call.isQueued else {
                advanceWaiting()
                continue
            }
            guard let connection = checkOut(at: now) else {
                // Starving now: a connection given back just before was not seen as wanted.
                if openCount < capacity && budget.starve(member) { dispatchWaiting(at: now) }
                if budget.isContended { publishDemand() }
                return
            }
            advanceWaiting()
            queuedCount -= 1
            dispatch(call, on: connection)
        }
        budget.fed(member)
        if active.isEmpty && publishedDemand != 0 { publishDemand() }
    }

    private func dispatch(_ call: UpstreamCall, on connection: any UpstreamConnection) {
        call.activeIndex = active.count
        active.append(call)
        call.dispatch(on: connection)
    }

    /// Takes `call` out of ``active`` (the last call moves into its place); once only.
    private func removeActive(_ call: UpstreamCall) {
        let index = call.activeIndex
        guard active.indices.contains(index), active[index] === call else { return }
        call.activeIndex = -1
        let last = active.removeLast()
        if index < active.count {
            active[index] = last
            last.activeIndex = index
        }
    }

    /// Cancels every call, queued or on a connection (the client is going away).
    func cancelAll() {
        let calls = Array(waiting[waitingHead...]) + active
        for call in calls { call.cancel() }
        waiting.removeAll()
        waitingHead = 0
        queuedCount = 0
        budget.fed(member)
    }

    private func advanceWaiting() {
        waitingHead += 1
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: true)
            waitingHead = 0
        }
    }
}

/// A socket one pool lends another (``ConnectionPool/adopt(_:)``), with its place in the
/// budget. Whoever holds it last either takes the socket or, dropping it, closes the socket
/// and gives the place back: a pool gone by the time the job runs, one without room, a job a
/// stopped loop drops without running it. `@unchecked Sendable`: made on the lending loop,
/// then used only on the borrowing loop, by the one job it travels in.
final class LentConnection: @unchecked Sendable {
    private var socket: LentSocket?
    private let budget: ConnectionBudget

    init(_ socket: LentSocket, budget: ConnectionBudget) {
        self.socket = socket
        self.budget = budget
    }

    deinit {
        guard let socket else { return }
        Glibc.close(socket.descriptor)
        budget.giveBack()
    }

    /// The socket, now the caller's with its place in the budget (nil after the first take).
    func take() -> LentSocket? {
        defer { socket = nil }
        return socket
    }
}
