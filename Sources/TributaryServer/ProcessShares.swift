import AccessControl
import Aggregation
public import EventLoop
import Fleet
public import Logging
import UpstreamClient
public import Telemetry
public import TributaryConfiguration

/// What every worker of a process shares, built once by ``Service`` and handed to each
/// worker alike: the live pipelines of shared resources (``LivePipelines``), the circuit
/// breakers (an upstream failing is the same upstream for every worker), the last good
/// documents for `staleIfError`, the connection budgets the workers' pools take from, the
/// key identities are hashed with, the directory of live streams, and the process's place
/// in the fleet.
///
/// Made on the process's own ``loop``, where the fleet's agent and the JWKS fetcher run; the
/// workers are alike, and each runs the shared pipelines whose keys fall to it.
public final class ProcessShares: Sendable {
    /// The process's own loop: the fleet's agent and the JWKS fetcher. ``Service`` runs it on
    /// a thread no worker serves from; a process of one worker made without shares uses the
    /// worker's.
    let loop: EventLoop
    let pipelines: LivePipelines
    let breakers: CircuitBreakers
    let staleSnapshots: StaleSnapshots
    let connectionBudgets: ConnectionBudgets
    let identities: IdentityHasher
    let directory: StreamDirectory
    /// The list resources' detail caches (`details.cacheFor`).
    let detailCaches = DetailCaches()
    /// This replica's place in the fleet (nil without `cluster.redis`).
    let cluster: ClusterLink?
    /// Whether to send this process traffic (`GET /readyz`): once a worker listens and, in a
    /// fleet, the fleet is joined; not while draining.
    let readiness: Readiness
    /// Verifies bearer tokens, keeping those verified (nil without `auth.jwt`).
    let tokens: TokenVerifier?
    /// Fetches the JWKS on the process's loop (nil without `auth.jwt.jwks`).
    let jwks: LoopBound<JWKSFetcher>?
    /// The process's rate limits (a fleet's while Redis is away), and its clients' streams.
    let rateLimits: LocalRateLimiter
    let streamQuota = StreamQuota()
    /// Where requests, upstream calls and refreshes record their spans (nil: tracing is off).
    let spans: Spans?

    /// The shares of a process serving `configuration`, made on `loop`, the process's own.
    public init(configuration: Configuration, loop: EventLoop, logger: Logger, spans: Spans? = nil) {
        _ = MetricsExport.registry  // metrics exist before any handle is made
        self.loop = loop
        self.spans = spans
        rateLimits = LocalRateLimiter(capacity: configuration.server.maxRateLimitBuckets)
        breakers = CircuitBreakers(logger: logger)
        staleSnapshots = StaleSnapshots(budget: configuration.server.staleIfErrorBytes)
        connectionBudgets = ConnectionBudgets()
        // In a fleet every replica must give a client the same identity: its leases and
        // channels are named by it.
        identities = IdentityHasher(secret: configuration.cluster?.secret?.bytes)
        let directory = StreamDirectory()
        self.directory = directory
        let readiness = Readiness(needsFleet: configuration.cluster != nil) { logger.info("ready") }
        self.readiness = readiness
        let cluster = configuration.cluster.map { settings in
            let agent = ClusterAgent(settings: settings, loop: loop, directory: directory, logger: logger) { readiness.joinedFleet() }
            return ClusterLink(agent: LoopBound(agent, loop: loop))
        }
        self.cluster = cluster
        pipelines = LivePipelines(fleet: cluster?.agent, maxIdentities: configuration.server.maxIdentities)
        guard let jwt = configuration.auth.jwt else {
            tokens = nil
            jwks = nil
            return
        }
        let verified = VerifiedTokens()
        let keys = TokenKeys(expectsJWKS: jwt.jwks != nil) { verified.removeAll() }
        let configured = jwt.keys
        // jwt-kit makes its verifiers on a task (its key collection is an actor); tokens
        // wait for them (TokenKeys.whenLoaded).
        Task {
            do {
                keys.setConfigured(try await TokenKeys.make(configured))
            } catch {
                logger.error("auth: a key of auth.jwt.keys could not be used; tokens are verified without the file's keys")
                keys.setConfigured([])
            }
        }
        let fetcher = jwt.jwks.map { url in
            LoopBound(JWKSFetcher(url: url, every: jwt.jwksRefresh, keys: keys, loop: loop, logger: logger), loop: loop)
        }
        jwks = fetcher
        var refetch: (@Sendable (String, @escaping @Sendable () -> Void) -> Void)?
        if let fetcher {
            refetch = { kid, done in fetcher.loop.execute { fetcher.value.refetch(for: kid, done) } }
        }
        tokens = TokenVerifier(settings: jwt, keys: keys, tokens: verified, hasher: identities, refetch: refetch)
    }
}

extension ProcessShares {
    /// A reload, which removes or changes the resources in `endings`, is about to reach the
    /// workers (on ``loop``, before any worker applies it): the fleet stops sharing those now,
    /// so that a pipeline of a new definition, which the agent adopts on this loop, is adopted
    /// after this.
    func willApply(_ applied: Configuration, ending endings: [String: ResourceEnding]) {
        staleSnapshots.budget = applied.server.staleIfErrorBytes
        for name in endings.keys { cluster?.agent.value.release(name) }
    }

    /// Every worker applied the reload and ended the streams of what it removed or changed:
    /// the pipelines of those resources that no stream follows (a public document kept
    /// stopped) are forgotten, and the detail caches of those removed.
    func didApply(ending endings: [String: ResourceEnding]) {
        for (name, ending) in endings {
            pipelines.forgetIdle(of: name)
            if ending == .removed { detailCaches.forget(name) }
        }
    }

    /// The resources `running` serves that `applied` removes or changes.
    static func endings(from running: Configuration, to applied: Configuration) -> [String: ResourceEnding] {
        var endings: [String: ResourceEnding] = [:]
        for name in running.resources.keys {
            guard let definition = applied.definition(of: name) else {
                endings[name] = .removed
                continue
            }
            if definition != running.definition(of: name) { endings[name] = .changed }
        }
        return endings
    }
}
