import Synchronization

/// Whether the process should be sent traffic: what `GET /readyz` answers, for a load
/// balancer or an orchestrator (`/healthz` stays liveness: 200 while the process runs).
///
/// ```
/// starting ──(a worker listens, and with cluster.redis: the fleet joined)──▶ ready ──(stop signal)──▶ draining
/// ```
///
/// A replica of a fleet is ready once it has joined the fleet, not before: until then it
/// would run every shared pipeline alone (one more list call per refresh for the fleet)
/// and answer stream control for other replicas' streams with `503 cluster_unavailable`.
/// Losing Redis later does not make it unready: the contract has each replica serve alone
/// then, and a fleet whose Redis went away must not leave its load balancer with no replica.
/// Draining is for good. Safe from any thread; every worker of the process shares it.
final class Readiness: Sendable {
    enum State {
        case starting, ready, draining
    }

    private struct Conditions {
        var listening = false
        var joined: Bool
        var draining = false

        var state: State { draining ? .draining : listening && joined ? .ready : .starting }
    }

    private let conditions: Mutex<Conditions>
    private let becameReady: @Sendable () -> Void

    /// `needsFleet`: the process has `cluster.redis`, and is ready only once it joined.
    /// `becameReady` runs once, when it first is (the log line tests and operators wait for).
    init(needsFleet: Bool, becameReady: @escaping @Sendable () -> Void = {}) {
        conditions = Mutex(Conditions(joined: !needsFleet))
        self.becameReady = becameReady
    }

    var state: State { conditions.withLock { $0.state } }

    /// A worker listens: requests are answered.
    func listening() { change { $0.listening = true } }

    /// The fleet's agent joined the fleet (its first connection to Redis is up).
    func joinedFleet() { change { $0.joined = true } }

    /// Shutdown began: no new connections are accepted.
    func draining() { change { $0.draining = true } }

    private func change(_ update: (inout Conditions) -> Void) {
        let (before, after) = conditions.withLock { conditions in
            let before = conditions.state
            update(&conditions)
            return (before, conditions.state)
        }
        if before == .starting && after == .ready { becameReady() }
    }
}
