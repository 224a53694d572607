import Aggregation
public import EventLoop
public import Logging
import UpstreamClient
public import Telemetry

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
    /// The list resources' detail caches (`details.cacheFor`).
    let detailCaches = DetailCaches()
    /// This replica's place in the fleet (nil without `cluster.redis`).
    let cluster: ClusterLink?
    /// Whether to send this process traffic (`GET /readyz`): once a worker listens and, in a
    /// fleet, the fleet is joined; not while draining.
    let readiness: Readiness
    /// Verifies bearer tokens, keeping those verified (nil without `auth.jwt`).
    let tokens: TokenVerifier?
    /// Fetches the JWKS on the home loop (nil without `auth.jwt.jwks`).
    let jwks: LoopBound<JWKSFetcher>?
    /// The process's rate limits (a fleet's while Redis is away), and its clients' streams.
    let rateLimits: LocalRateLimiter
    let streamQuota = StreamQuota()
    /// Where requests, upstream calls and refreshes record their spans (nil: tracing is off).
    let spans: Spans?

    /// The shares of a process serving `configuration`; on `home`, which they are made on.
    public init(configuration: Configuration, home: EventLoop, logger: Logger, spans: Spans? = nil) {
        _ = MetricsExport.registry  // metrics exist before any handle is made
        self.home = home
        self.spans = spans
        pipelines = LivePipelines(home: home, maxIdentities: configuration.server.maxIdentities)
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
        cluster = configuration.cluster.map { settings in
            let agent = ClusterAgent(settings: settings, loop: home, directory: directory, logger: logger) { readiness.joinedFleet() }
            return ClusterLink(agent: LoopBound(agent, loop: home))
        }
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
            LoopBound(JWKSFetcher(url: url, every: jwt.jwksRefresh, keys: keys, loop: home, logger: logger), loop: home)
        }
        jwks = fetcher
        var refetch: (@Sendable (String, @escaping @Sendable () -> Void) -> Void)?
        if let fetcher {
            refetch = { kid, done in fetcher.loop.execute { fetcher.value.refetch(for: kid, done) } }
        }
        tokens = TokenVerifier(settings: jwt, keys: keys, tokens: verified, hasher: identities, refetch: refetch)
    }
}
