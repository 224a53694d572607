import Aggregation
public import EventLoop
public import Logging
import UpstreamClient

/// What every worker of a process shares, built once by ``Service`` and handed to each
/// worker alike: the live pipelines of shared resources (``LivePipelines``), the circuit
/// breakers (an upstream failing is the same upstream for every worker), the last good
/// documents for `staleIfError`, the connection budgets the workers' pools take from, the
/// key identities are hashed with, the directory of live streams, and the process's place
/// in the fleet.
///
/// Made on its ``home`` loop, which runs the shared pipelines and the fleet's agent: the
/// worker on that loop makes the pipelines when another worker first asks for one.
public final class ProcessShares: Sendable {
    let home: EventLoop
    let pipelines: LivePipelines
    let breakers: CircuitBreakers
    let staleSnapshots: StaleSnapshots
    let connectionBudgets: ConnectionBudgets
    let identities: IdentityHasher
    let directory: StreamDirectory
    /// This replica's place in the fleet (nil without `cluster.redis`).
    let cluster: ClusterLink?

    /// The shares of a process serving `configuration`; on `home`, which they are made on.
    public init(configuration: Configuration, home: EventLoop, logger: Logger) {
        _ = MetricsExport.registry  // metrics exist before any handle is made
        self.home = home
        pipelines = LivePipelines(home: home, maxIdentities: configuration.server.maxIdentities)
        breakers = CircuitBreakers(logger: logger)
        staleSnapshots = StaleSnapshots(budget: configuration.server.staleIfErrorBytes)
        connectionBudgets = ConnectionBudgets()
        identities = IdentityHasher(secret: nil)
        let directory = StreamDirectory()
        self.directory = directory
        cluster = configuration.cluster.map { settings in
            ClusterLink(agent: LoopBound(ClusterAgent(settings: settings, loop: home, directory: directory, logger: logger), loop: home))
        }
    }
}
