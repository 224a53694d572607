import Synchronization
import EventLoop

/// The connection budgets of a process, one per upstream origin, shared by every worker's
/// ``UpstreamClient`` (pass the same object in each client's
/// ``UpstreamClient/Configuration/connectionBudgets``). Safe from any thread.
///
/// Each worker runs its own loop and pools, and the kernel spreads client connections over the
/// workers unevenly (SO_REUSEPORT). With a fixed share each, a busy worker's calls would wait
/// for its share while another worker's sat idle; with a shared budget a worker may hold up to
/// the whole limit while the others do not need it, and gives connections back when they do.
public final class ConnectionBudgets: Sendable {
    private let budgets = Mutex<[BaseURL.Origin: ConnectionBudget]>([:])

    public init() {}

    func budget(for origin: BaseURL.Origin) -> ConnectionBudget {
        budgets.withLock { budgets in
            if let budget = budgets[origin] { return budget }
            let budget = ConnectionBudget()
            budgets[origin] = budget
            return budget
        }
    }
}

/// How many connections the pools of one origin may hold together (connecting, busy and idle),
/// and which of those pools have calls waiting because the budget is spent. Safe from any
/// thread: a pool takes from it before it opens a connection and gives back when one closes
/// (one atomic operation each), and reads two counters when a connection comes back.
///
/// Lending, when a pool is *starving* (calls wait, and it is below the limit itself):
/// - every other pool is nudged on its own loop to close its idle connections beyond its share;
/// - a pool holding its share or more opens no new connection; one holding more than its
///   share by some slack (or all but one of the limit) closes busy ones as their calls end,
///   instead of reusing them, until it is back within it.
///   Its share is the limit in proportion to its demand (calls waiting or on a connection)
///   among all the pools' demands, which the pools publish only while one of them starves (or
///   when theirs drops to none);
/// - every connection given back wakes the starving pools on their loops to take it; an idle
///   plain-HTTP connection goes itself, socket and place in the budget together, to a starving
///   pool on its loop (``ConnectionPool``'s lending), which goes on using it: no TCP handshake
///   there and close here for a connection that was fine.
///
/// So a lone busy worker gets the whole limit, and busy workers share it as their calls do:
/// a call waits about as long whichever worker it is on, as with one pool for the process.
final class ConnectionBudget: Sendable {
    private let limitValue = Atomic<Int>(Int.max)
    private let held = Atomic<Int>(0)
    private let starvingCount = Atomic<Int>(0)
    private let memberCount = Atomic<Int>(0)
    /// The pools' demands as last published (see ``share(forDemand:)``).
    private let demandTotal = Atomic<Int>(0)
    private let members = Mutex<[Member]>([])

    /// One pool's place in the budget: its loop, and whether it starves. The pool is reached
    /// only on its loop, and only while its client keeps it (a nudge may run after that).
    final class Member: @unchecked Sendable {
        let loop: EventLoop
        /// Read and written on `loop` only; nil once the pool's client let it go
        /// (``ConnectionPool/retire()``, which breaks the cycle pool → member → pool).
        ///
        /// Strong, not weak: a weakly referenced object keeps its counts in a side table, and
        /// then every retain and release of it takes the slow path. The pool is retained and
        /// released several times per upstream call.
        var pool: ConnectionPool?
        let isStarving = Atomic<Bool>(false)

        init(pool: ConnectionPool) {
            self.pool = pool
            loop = pool.loop
        }
    }

    /// The most connections the pools may hold together (`poolSize`).
    var limit: Int { limitValue.load(ordering: .relaxed) }

    func setLimit(_ limit: Int) {
        limitValue.store(max(1, limit), ordering: .relaxed)
    }

    /// Connections held now by all the pools.
    var heldCount: Int { held.load(ordering: .sequentiallyConsistent) }

    var isOverLimit: Bool { heldCount > limit }

    /// What a pool with `demand` calls (waiting or on a connection) may keep while another
    /// starves: the limit in proportion to its part of all the pools' published demands (an
    /// equal part when none is known), rounded up (rounded down, a connection of an odd limit
    /// would go back and forth), at least one.
    func share(forDemand demand: Int) -> Int {
        let total = max(demand, demandTotal.load(ordering: .relaxed))
        guard total > 0 else {
            let pools = max(1, memberCount.load(ordering: .relaxed))
            return max(1, (limit + pools - 1) / pools)
        }
        return max(1, (limit * demand + total - 1) / total)
    }

    /// A pool's demand changed by `delta` since it last published it.
    func addDemand(_ delta: Int) {
        demandTotal.add(delta, ordering: .relaxed)
    }

    /// Whether some pool starves (the pools then publish their demands).
    var isContended: Bool { starvingCount.load(ordering: .relaxed) > 0 }

    func join(_ member: Member) {
        members.withLock { $0.append(member) }
        memberCount.add(1, ordering: .relaxed)
    }

    /// `member` leaves with the `connections` it still holds and the demand it published last.
    func leave(_ member: Member, holding connections: Int, demand: Int) {
        members.withLock { $0.removeAll { $0 === member } }
        memberCount.subtract(1, ordering: .relaxed)
        addDemand(-demand)
        fed(member)
        if connections > 0 { giveBack(connections) }
    }

    /// Takes one connection's worth if the budget has it.
    func take() -> Bool {
        var current = held.load(ordering: .sequentiallyConsistent)
        while current < limit {
            let (exchanged, original) = held.compareExchange(
                expected: current, desired: current + 1, ordering: .sequentiallyConsistent)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Returns `count` connections' worth (closed, or never opened) and wakes the starving pools.
    func giveBack(_ count: Int = 1) {
        held.subtract(count, ordering: .sequentiallyConsistent)
        guard starvingCount.load(ordering: .sequentiallyConsistent) > 0 else { return }
        for member in members.withLock({ $0 }) where member.isStarving.load(ordering: .relaxed) {
            member.loop.execute { member.pool?.budgetFreed() }
        }
    }

    /// A starving pool other than `member`'s whose loop runs, to lend a connection to (nil when
    /// none starves; a loop that stopped with calls in line stays marked starving).
    func starvingMember(besides member: Member) -> Member? {
        guard starvingCount.load(ordering: .relaxed) > 0 else { return nil }
        return members.withLock { members in
            members.first { $0 !== member && $0.isStarving.load(ordering: .relaxed) && $0.loop.isRunning }
        }
    }

    /// Whether a pool other than `member` starves (`member` holding its share or more then
    /// owes it connections).
    func othersStarve(than member: Member) -> Bool {
        let starving = starvingCount.load(ordering: .relaxed)
        return starving > 0 && (starving > 1 || !member.isStarving.load(ordering: .relaxed))
    }

    /// Marks `member` starving; true when it was not yet (the others are nudged then, and the
    /// caller should try ``take()`` once more: a connection given back just before was not
    /// seen as wanted).
    func starve(_ member: Member) -> Bool {
        guard !member.isStarving.exchange(true, ordering: .sequentiallyConsistent) else { return false }
        starvingCount.add(1, ordering: .sequentiallyConsistent)
        for other in members.withLock({ $0 }) where other !== member {
            other.loop.execute { other.pool?.lendIdle() }
        }
        return true
    }

    /// `member` no longer starves (its line is empty, or it left).
    func fed(_ member: Member) {
        guard member.isStarving.load(ordering: .relaxed),
            member.isStarving.exchange(false, ordering: .sequentiallyConsistent)
        else { return }
        starvingCount.subtract(1, ordering: .sequentiallyConsistent)
    }
}
