import Aggregation
import CoreMetrics
import Libevent
import OpenCombine
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
/// keeps the latest state and sends no error. States carry their leader's term (when it took
/// the lease, by Redis's clock) and a sequence number, so a follower never goes back to an
/// older state. Loop-confined to the first
/// worker's loop; the process's other workers reach it through ``RemoteLiveResource``.
final class FleetLiveResource: LiveSource {
    enum Role: Equatable {
        case idle
        case standalone
        case leading(term: UInt64)
        case following
    }

    let name: String
    /// The latest state at once, then every newer one; subscribing and leaving is counted, as
    /// the fleet runs the pipeline only while some replica has subscribers.
    private(set) lazy var states: AnyPublisher<LiveState, Never> = latest.compactMap { $0 }.removeDuplicates().shareLatest()
        .handleEvents(
            receiveSubscription: { [unowned self] _ in subscribersChanged(by: 1) },
            receiveCancel: { [unowned self] in subscribersChanged(by: -1) })
        .eraseToAnyPublisher()
    private(set) var role = Role.idle
    /// Subscribers of ``states`` in this process (one per other worker that has any).
    private(set) var subscribers = 0

    private let local: LiveResource
    private unowned let agent: ClusterAgent
    private let latest = CurrentValueSubject<LiveState?, Never>(nil)
    /// The newest (term, sequence) taken in: older ones are dropped.
    private var newest: (term: UInt64, sequence: UInt64) = (0, 0)
    private var sequence: UInt64 = 0
    private var pipeline: AnyCancellable?
    private var relay: AnyCancellable?
    private let leaseHeld: Gauge

    init(local: LiveResource, agent: ClusterAgent) {
        name = local.name
        self.local = local
        self.agent = agent
        leaseHeld = Gauge(label: "tributary_cluster_lease_held", dimensions: [("resource", local.name)])
        leaseHeld.record(0)
    }

    /// Refreshes now, for every subscriber of every replica: the holder of the lease runs the
    /// refresh, so the reload goes through Redis (or stays here when running alone).
    func reload() {
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
        if case .leading = previous { leaseHeld.record(0) }
        switch role {
        case .idle:
            stopPipeline()
            relay = nil
        case .standalone:
            relay = nil
            startPipeline()
        case .leading(let term):
            relay = nil
            sequence = 0
            newest = (term, 0)
            leaseHeld.record(1)
            // A leader that already runs the pipeline (it ran alone) publishes its latest at once.
            if pipeline != nil, let state = latest.value { publish(state) }
            startPipeline()
        case .following:
            stopPipeline()
            relay = agent.follow(name) { [unowned self] state, term, sequence in
                take(state, term: term, sequence: sequence)
            }
        }
    }

    private func startPipeline() {
        guard pipeline == nil else { return }
        pipeline = local.states.sink { [unowned self] state in
            latest.send(state)
            publish(state)
        }
    }

    private func stopPipeline() {
        pipeline = nil
    }

    /// Sends a state of the local pipeline to the fleet, when leading.
    private func publish(_ state: LiveState) {
        guard case .leading(let term) = role else { return }
        sequence += 1
        agent.publish(name, state: state, term: term, sequence: sequence)
    }

    /// A state from the fleet's leader, when following.
    private func take(_ state: LiveState, term: UInt64, sequence: UInt64) {
        guard role == .following, term > newest.term || (term == newest.term && sequence > newest.sequence) else { return }
        newest = (term, sequence)
        latest.send(state)
    }

    private func subscribersChanged(by change: Int) {
        let before = subscribers
        subscribers += change
        if (before == 0) != (subscribers == 0) { agent.interestChanged(in: name) }
    }
}
