public import Aggregation
public import Libevent
public import Logging

/// Everything one event loop serves: the HTTP server, the upstream client and its pools, the
/// resources from the configuration, their live pipelines and event streams, and the routes
/// to them. Several workers (one per thread) share a port. Loop-confined.
///
/// ```swift
/// let worker = try Worker(configuration: configuration, loop: loop, logger: logger)
/// try worker.bind()
/// try loop.run()
/// ```
public final class Worker {
    public let loop: EventLoop
    /// The configuration it serves: the one it started with, or the last reload applied.
    public private(set) var configuration: Configuration
    let logger: Logger
    let server: HTTPServer
    let client: UpstreamClient
    let streams: EventStreamHub
    private let directory: StreamDirectory
    private var cors: CORSPolicy
    private let observer: RequestObserver
    private let connections: ConnectionObserver
    private var router = Router<Route>()
    /// What the first worker shares with the process's other workers (nil on the others).
    public private(set) var shares: Shares?
    /// The first worker's, when this worker is another (the latest: a reload renews them).
    private var firstWorkerShares: Shares?
    /// This replica's place in the fleet, on the first worker (with `cluster.redis`).
    private var cluster: ClusterAgent?
    /// The process's circuit breakers, by upstream name: the first worker's, shared by all
    /// (the first worker makes them, and a reload keeps those of unchanged upstreams).
    private var breakers: [String: CircuitBreaker] = [:]
    private var shutdown: (done: () -> Void, deadline: LoopTimer)?
    private var drainCheck: LoopTimer?
    /// The process's last good JSON documents, for `staleIfError` (the first worker's).
    private let staleSnapshots: StaleSnapshots
    /// The process's connections per upstream origin, lent between the workers (the first
    /// worker's).
    private let connectionBudgets: ConnectionBudgets

    /// What the first worker of a process shares with the others: the live pipelines it runs
    /// for all of them, the process's place in the fleet, and its circuit breakers (an
    /// upstream failing is the same upstream for every worker), and the connection budgets its
    /// pools and theirs take from (`poolSize` is the whole process's).
    public struct Shares: Sendable {
        /// Each live resource's source: the pipeline, or in a fleet its ``FleetLiveResource``.
        public let live: [String: LoopBound<any LiveSource>]
        let cluster: ClusterLink?
        let breakers: [String: CircuitBreaker]
        let staleSnapshots: StaleSnapshots
        let connectionBudgets: ConnectionBudgets
    }

    /// A worker on `loop`. The first worker of a process runs the live pipelines itself (and,
    /// with `cluster.redis`, joins the fleet); pass its ``shares`` to every other worker, which
    /// then bridges to them, so each live resource has one pipeline however many workers
    /// serve it. Workers of one process share one `directory` of live streams, so any worker
    /// can reach a stream's triggers and inputs.
    public init(
        configuration: Configuration, loop: EventLoop, logger: Logger, shares firstWorkerShares: Shares? = nil,
        directory: StreamDirectory = StreamDirectory()
    ) throws {
        _ = MetricsExport.registry  // metrics exist before any handle is made
        self.firstWorkerShares = firstWorkerShares
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        connectionBudgets = firstWorkerShares?.connectionBudgets ?? ConnectionBudgets()
        client = UpstreamClient(loop: loop, configuration: .init(connectionBudgets: connectionBudgets))
        self.directory = directory
        staleSnapshots = firstWorkerShares?.staleSnapshots ?? StaleSnapshots()
        var clusterLink = firstWorkerShares?.cluster
        if firstWorkerShares == nil, let settings = configuration.cluster {
            let agent = ClusterAgent(settings: settings, loop: loop, directory: directory, logger: logger)
            cluster = agent
            clusterLink = ClusterLink(agent: LoopBound(agent, loop: loop))
        }
        streams = EventStreamHub(loop: loop, settings: configuration.sse, directory: directory, cluster: clusterLink)
        cors = CORSPolicy(allowedOrigins: Set(configuration.server.corsOrigins))
        observer = RequestObserver(logger: logger)
        connections = ConnectionObserver(logger: logger)
        server = try HTTPServer(loop: loop, limits: configuration.server.limits) { _ in }
        registerRoutes()
        server.handler = { [unowned self] request in route(request) }
        server.onComplete = { [unowned self] request in completed(request) }
        server.onConnectionCountChange = { [unowned self] count in connections.connectionCountChanged(to: count) }
        server.onAcceptPaused = { [unowned self] code in connections.acceptPaused(code) }
    }

    /// Listens on the configured address, or on `port` if given (SO_REUSEPORT when several
    /// workers share it); returns the bound port.
    @discardableResult
    public func bind(port: UInt16? = nil, reusePort: Bool = false) throws -> UInt16 {
        let listen = configuration.server.listen
        return try server.bind(host: listen.host, port: port ?? listen.port, reusePort: reusePort)
    }

    /// Stops gracefully: no new connections, every event stream ended, and `done` once the
    /// requests in flight are answered and every answer has left (or `deadline` passed).
    public func shutDown(within deadline: Duration, then done: @escaping () -> Void) {
        server.stopAccepting()
        cluster?.leave()
        streams.finishAll()
        let timer = LoopTimer(loop: loop) { [unowned self] in
            logger.warning("shutdown deadline passed", metadata: ["open requests": "\(server.openRequestCount)"])
            finishShutdown()
        }
        timer.schedule(after: deadline)
        shutdown = (done, timer)
        if server.openRequestCount == 0 { drainThenFinish() }
    }

    /// Finishes once the sockets took every answer, checking every few milliseconds (the
    /// deadline still applies: a client that does not read cannot hold the stop up).
    private func drainThenFinish() {
        guard server.hasPendingOutput else { return finishShutdown() }
        let check = LoopTimer(loop: loop) { [unowned self] in drainThenFinish() }
        check.schedule(after: .milliseconds(5))
        drainCheck = check
    }

    private func finishShutdown() {
        guard let shutdown else { return }
        self.shutdown = nil
        drainCheck = nil
        shutdown.deadline.cancel()
        shutdown.done()
    }

    // MARK: - Routes

    /// One resource as this worker serves it: the definition it was built from, how it adds
    /// its routes, and how a stream of it gets its view. A reload keeps it, and with it the
    /// live streams following it, while its definition stays the same.
    private struct MountedResource {
        let definition: Configuration.ResourceDefinition
        let register: (inout Router<Route>) -> Void
        let liveViews: LiveViewFactory
        /// The pipeline the first worker runs for every worker (a `kind: list` resource).
        let owned: LoopBound<any LiveSource>?
    }

    /// The resources served now, by name.
    private var mounted: [String: MountedResource] = [:]
    /// The upstreams their pipelines call, each with the settings it was made from; an
    /// upstream whose calls a reload leaves alone keeps its object.
    private var upstreams: [String: (settings: Configuration.UpstreamSettings, upstream: Upstream)] = [:]
    /// `server.adminToken`, shared by the routes that need it, so a reload changes it for all.
    private lazy var admin = AdminToken(token: configuration.server.adminToken)

    /// Takes up `configuration`, a reload of the running one whose restart-only settings are
    /// the running ones (``Configuration/keepingRestartOnlySettings(of:)``). New requests see
    /// the new routes; a resource whose definition (its settings and its upstream's) did not
    /// change keeps its routes, pipeline and live streams untouched; the streams of one that
    /// was removed or changed end with `resource_removed` or `resource_changed`. The first
    /// worker applies it first and passes its new ``shares`` to the others (`shares`).
    public func apply(_ configuration: Configuration, shares firstWorkerShares: Shares? = nil) {
        self.configuration = configuration
        self.firstWorkerShares = firstWorkerShares
        cors = CORSPolicy(allowedOrigins: Set(configuration.server.corsOrigins))
        admin.token = configuration.server.adminToken
        registerRoutes()
    }

    /// Builds the router from ``configuration``: mounts every resource not mounted with the
    /// same definition yet, ends the streams of those removed or changed, and adds the
    /// endpoints that list the resources (`/events`, `/openapi.json`).
    private func registerRoutes() {
        updateUpstreams()
        var endings: [String: ResourceEnding] = [:]
        for (name, resource) in mounted {
            guard let definition = configuration.definition(of: name) else {
                endings[name] = .removed
                continue
            }
            if definition != resource.definition { endings[name] = .changed }
        }
        for name in endings.keys {
            mounted[name] = nil
            cluster?.release(name)
        }
        streams.end(endings)
        for name in configuration.resources.keys.sorted() where mounted[name] == nil {
            mounted[name] = mount(name)
        }
        var router = Router<Route>()
        for name in mounted.keys.sorted() { mounted[name]!.register(&router) }
        EventsRoutes(views: mounted.mapValues(\.liveViews), streams: streams).register(in: &router)
        if firstWorkerShares == nil {
            shares = Shares(
                live: mounted.compactMapValues(\.owned), cluster: clusterLink, breakers: breakers, staleSnapshots: staleSnapshots,
                connectionBudgets: connectionBudgets)
        }
        StreamControlRoutes(directory: directory, cluster: clusterLink, loop: loop).register(in: &router)
        OperationsRoutes(openAPIDocument: Snapshot(OpenAPIDocument(configuration).json)).register(in: &router)
        self.router = router
    }

    /// The fleet, the first worker's agent or the one it shares (nil without `cluster.redis`).
    private var clusterLink: ClusterLink? {
        firstWorkerShares?.cluster ?? cluster.map { ClusterLink(agent: LoopBound($0, loop: loop)) }
    }

    /// Makes resource `name`'s routes from ``configuration``.
    private func mount(_ name: String) -> MountedResource {
        let resource = configuration.resources[name]!
        let upstream = upstreams[resource.upstream]!.upstream
        let answers = JSONAnswers(resource: name, settings: resource.answers, staleSnapshots: staleSnapshots)
        switch resource {
        case .list(let settings):
            let list = ListResource(name: name, upstream: upstream, definition: settings.definition)
            let live: any LiveSource
            var owned: LoopBound<any LiveSource>?
            if let owner = firstWorkerShares?.live[name] {
                live = RemoteLiveResource(owner: owner, name: name, loop: loop)
            } else {
                let local = LiveResource(name: name, refreshInterval: settings.refreshInterval, loop: loop, snapshot: list.snapshot(trace:))
                let maximumDocumentBytes = upstreams[resource.upstream]!.settings.policy.maxResponseBytes
                live = cluster.map { $0.adopt(local, maximumDocumentBytes: maximumDocumentBytes) } ?? local
                owned = LoopBound(live, loop: loop)
            }
            let routes = ListResourceRoutes(resource: list, live: live, streams: streams, admin: admin, answers: answers)
            return MountedResource(
                definition: configuration.definition(of: name)!, register: routes.register(in:), liveViews: routes.liveViews, owned: owned)
        case .pages(let settings):
            let pages = PagedListResource(name: name, upstream: upstream, definition: settings.definition)
            let routes = PagedListRoutes(
                resource: pages, argument: settings.loadMoreArgument, streams: streams, directory: directory,
                cluster: clusterLink, admin: admin, answers: answers)
            return MountedResource(
                definition: configuration.definition(of: name)!, register: routes.register(in:), liveViews: routes.liveViews, owned: nil)
        case .search(let settings):
            let search = SearchResource(name: name, upstream: upstream, definition: settings.definition)
            let routes = SearchRoutes(resource: search, streams: streams, scheduler: EventLoopScheduler(loop: loop), answers: answers)
            return MountedResource(
                definition: configuration.definition(of: name)!, register: routes.register(in:), liveViews: routes.liveViews, owned: nil)
        }
    }

    /// Makes an ``Upstream`` for each upstream new or changed in ``configuration`` (a
    /// `poolSize` or `maxQueue` alone changes the pool, not the upstream), with its circuit
    /// breaker (the first worker's new one, the one an unchanged upstream had), and sets the
    /// connection pool limits of every origin.
    private func updateUpstreams() {
        for (origin, limit) in configuration.poolLimits {
            guard let url = configuration.upstreams.values.first(where: { $0.url.origin == origin })?.url else { continue }
            client.setPoolLimits(capacity: limit.capacity, maxQueue: limit.maxQueue, for: url)
        }
        var updated: [String: (settings: Configuration.UpstreamSettings, upstream: Upstream)] = [:]
        var updatedBreakers: [String: CircuitBreaker] = [:]
        for (name, settings) in configuration.upstreams {
            if let known = upstreams[name], Self.sameCalls(known.settings, settings) {
                updated[name] = (settings, known.upstream)
                updatedBreakers[name] = breakers[name]
            } else {
                let breaker = firstWorkerShares.map { $0.breakers[name] }
                    ?? CircuitBreaker.forUpstream(name, settings: settings.circuitBreaker, logger: logger)
                updated[name] = (settings, Upstream(name: name, base: settings.url, policy: settings.policy, client: client, breaker: breaker))
                updatedBreakers[name] = breaker
            }
        }
        upstreams = updated
        breakers = updatedBreakers
    }

    /// Whether two settings of an upstream call it the same way (pool limits aside).
    private static func sameCalls(_ a: Configuration.UpstreamSettings, _ b: Configuration.UpstreamSettings) -> Bool {
        var b = b
        b.poolSize = a.poolSize
        b.maxQueue = a.maxQueue
        return a == b
    }

    private func route(_ request: ServerRequest) {
        // Fixed while its headers are at hand: its upstream calls and its log line carry it.
        _ = request.traceContext
        request.responseHeaders = cors.headers(for: request)
        if cors.isPreflight(request) {
            request.route = "preflight"
            return cors.answerPreflight(request)
        }
        switch router.match(request.method, path: request.path) {
        case .found(let route, let parameters):
            request.route = route.pattern
            request.parameters = parameters
            route.handle(request)
        case .methodNotAllowed(let allowed):
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            request.respond(.methodNotAllowed("\(request.method.rawValue) is not allowed on \(request.path) (allowed: \(names))"),
                            headers: [("Allow", names)])
        case .notFound:
            request.respond(.notFound("no resource at \(request.path)"))
        }
    }

    private func completed(_ request: ServerRequest) {
        observer.completed(request)
        if shutdown != nil && server.openRequestCount == 0 && drainCheck == nil { drainThenFinish() }
    }
}
