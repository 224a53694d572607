package import Aggregation
import CoreMetrics
package import OpenCombine
import Rivers

/// A shared live resource in a fleet: one pipeline for all the replicas, wherever it runs.
///
/// ```
///            ┌─ leading:    local pipeline ─┬─▶ latest ─▶ this process's subscribers
///  role ─────┤                              └─▶ Redis: latest state + PUBLISH (fenced by the lease)
///  (lease)   ├─ following:  Redis channel (and the latest state, on subscribing) ─▶ latest ─▶ …
///            ├─ standalone: local pipeline ─▶ latest ─▶ …        (Redis unreachable: alone, as without a fleet)
///            └─ idle:       nothing runs                        (nobody subscribed anywhere)
/// ```
///
/// The ``ClusterAgent`` decides the role on every tick from the resource's lease in Redis; the
/// subscribers see one stream of states whatever the role does underneath: switching from
/// following to leading (the holder died) or from standalone to following (Redis is back)
/// keeps the latest state and sends no error.
///
/// Subscribers never step back to older data. Every state carries when the pipeline that
/// made it produced it (wall-clock milliseconds; replicas' clocks are assumed synchronised
/// to well under a refresh interval), and a replica takes in only states newer than the one
/// it shows. That covers what terms alone would not: while Redis is away every replica runs
/// alone, so when the fleet forms again a follower may have shown newer data than the
/// leader's latest, and keeps it until the leader refreshes past it. A time from Redis is never
/// ahead of this replica's clock by more than `leaseTTL` (``FleetSeal`` refuses it), and every
/// sum with one saturates. Loop-confined to the agent's loop, the process's own; the
/// workers reach it through ``RemoteLiveResource``, and it reaches the worker that runs its
/// pipeline through another.
package final class FleetLiveResource: LiveSource {
    enum Role: Equatable {
        case idle
        case standalone
        case leading
        case following
    }

    /// What the fleet knows it by (its keys and channels in Redis): the resource's name for
    /// its one public document, the name and a digest of the key for a pipeline of parameter
    /// values or an identity (``ClusterAgent/fleetName(of:)``).
    package let name: String
    /// The key it is the pipeline of: its resource (the lease gauge's label) and parameter
    /// values, which a reload aimed at them names.
    let key: SharingKey
    var resource: String { key.resource }
    /// The latest state at once, then every newer one; subscribing and leaving is counted, as
    /// the fleet runs the pipeline only while some replica has subscribers.
    package private(set) lazy var states: AnyPublisher<LiveState, Never> = latest.compactMap { $0 }.removeDuplicates().shareLatest()
        .handleEvents(
            receiveSubscription: { [unowned self] _ in subscribersChanged(by: 1) },
            receiveCancel: { [unowned self] in subscribersChanged(by: -1) })
        .eraseToAnyPublisher()
    private(set) var role = Role.idle
    /// Subscribers of ``states`` in this process (one per other worker that has any).
    private(set) var subscribers = 0

    /// The pipeline as this replica runs it: a bridge to the worker that runs it.
    private let local: any LiveSource
    private unowned let agent: ClusterAgent
    /// The largest document taken from Redis: the upstream's `maxResponseBytes`.
    private let maximumDocumentBytes: Int
    private let latest = CurrentValueSubject<LiveState?, Never>(nil)
    /// When the state shown was produced (milliseconds since 1970); older ones are dropped.
    private var shownAt: UInt64 = 0
    private var pipeline: AnyCancellable?
    private var relay: AnyCancellable?

    init(local: any LiveSource, key: SharingKey, name: String, agent: ClusterAgent, maximumDocumentBytes: Int) {
        self.name = name
        self.key = key
        self.local = local
        self.agent = agent
        self.maximumDocumentBytes = maximumDocumentBytes
    }

    /// Its key was forgotten: it stops sharing, its lease going now if it leads.
    package func retire() {
        agent.retire(self)
    }

    /// Refreshes now, for every subscriber of every replica: the holder of the lease runs the
    /// refresh, so the reload goes through Redis (or stays here when running alone).
    package func reload() {
        agent.reload(name)
    }

    /// A reload reached this replica (from any replica): the pipeline refreshes if it runs here.
    func reloadIfRunning() {
        if pipeline != nil { local.reload() }
    }

    // MARK: - Roles

    /// Takes up `role` (the agent's decision for this tick).
    func become(_ role: Role) {
        guard role != self.role else { return }
        let previous = self.role
        self.role = role
        if case .leading = previous { agent.leaseChanged(of: resource, held: false) }
        switch role {
        case .idle:
            stopPipeline()
            relay = nil
        case .standalone:
            relay = nil
            startPipeline()
        case .leading:
            relay = nil
            agent.leaseChanged(of: resource, held: true)
            // A leader that already runs the pipeline (it ran alone) publishes its latest at
            // once; followers that showed newer data meanwhile keep theirs.
            republishLatest()
            startPipeline()
        case .following:
            stopPipeline()
            relay = agent.follow(name, maximumDocumentBytes: maximumDocumentBytes) { [unowned self] state, producedAt in
                take(state, producedAt: producedAt)
            }
        }
    }

    private func startPipeline() {
        guard pipeline == nil else { return }
        pipeline = local.states.sink { [unowned self] state in
            shownAt = max(WallClock.milliseconds(), shownAt.addingSaturated(1))
            // The fleet first: the other replicas' subscribers wait on Redis's round trip,
            // this replica's own on nothing but the loop. A progressive first document's
            // partial states stay here: the fleet gets documents whole.
            if !state.pending { publish(state, producedAt: shownAt) }
            latest.send(state)
        }
    }

    private func stopPipeline() {
        pipeline = nil
    }

    /// Publishes the state the running pipeline last made, when leading: on taking the lease,
    /// and when the lease was overwritten under a publish, which it fenced off, and is back.
    func republishLatest() {
        if pipeline != nil, let state = latest.value, !state.pending { publish(state, producedAt: shownAt) }
    }

    /// Sends a state of the local pipeline to the fleet, when leading.
    private func publish(_ state: LiveState, producedAt: UInt64) {
        guard case .leading = role else { return }
        agent.publish(name, state: state, producedAt: producedAt)
    }

    /// A state from the fleet's leader, when following: taken only if newer than the one shown.
    private func take(_ state: LiveState, producedAt: UInt64) {
        guard role == .following, producedAt > shownAt else { return }
        shownAt = producedAt
        latest.send(state)
    }

    private func subscribersChanged(by change: Int) {
        let before = subscribers
        subscribers += change
        if (before == 0) != (subscribers == 0) { agent.interestChanged(in: name) }
    }
}
