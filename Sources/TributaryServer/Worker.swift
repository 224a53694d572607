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
    public let configuration: Configuration
    let logger: Logger
    let server: HTTPServer
    let client: UpstreamClient
    let streams: EventStreamHub
    private let directory: StreamDirectory
    private let cors: CORSPolicy
    private let observer: RequestObserver
    private let connections: ConnectionObserver
    private var router = Router<Route>()
    /// What the first worker shares with the process's other workers (nil on the others).
    public private(set) var shares: Shares?
    /// The first worker's, when this worker is another.
    private let firstWorkerShares: Shares?
    /// This replica's place in the fleet, on the first worker (with `cluster.redis`).
    private var cluster: ClusterAgent?
    private var shutdown: (done: () -> Void, deadline: LoopTimer)?
    private var drainCheck: LoopTimer?
    /// The process's last good JSON documents, for `staleIfError` (the first worker's).
    private let staleSnapshots: StaleSnapshots

    /// What the first worker of a process shares with the others: the live pipelines it runs
    /// for all of them, and the process's place in the fleet.
    public struct Shares: Sendable {
        /// Each live resource's source: the pipeline, or in a fleet its ``FleetLiveResource``.
        public let live: [String: LoopBound<any LiveSource>]
        let cluster: ClusterLink?
        let staleSnapshots: StaleSnapshots
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
        client = UpstreamClient(loop: loop)
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

    private func registerRoutes() {
        let upstreams = makeUpstreams()
        let admin = AdminToken(token: configuration.server.adminToken)
        let clusterLink = firstWorkerShares?.cluster ?? cluster.map { ClusterLink(agent: LoopBound($0, loop: loop)) }
        var owned: [String: LoopBound<any LiveSource>] = [:]
        var liveViews: [String: LiveViewFactory] = [:]
        for (name, resource) in configuration.resources.sorted(by: { $0.key < $1.key }) {
            let answers = JSONAnswers(resource: name, settings: resource.answers, staleSnapshots: staleSnapshots)
            switch resource {
            case .list(let settings):
                let list = ListResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                let live: any LiveSource
                if let owner = firstWorkerShares?.live[name] {
                    live = RemoteLiveResource(owner: owner, name: name, loop: loop)
                } else {
                    let local = LiveResource(name: name, refreshInterval: settings.refreshInterval, loop: loop, snapshot: list.snapshot)
                    live = cluster.map { $0.adopt(local) } ?? local
                    owned[name] = LoopBound(live, loop: loop)
                }
                let routes = ListResourceRoutes(resource: list, live: live, streams: streams, admin: admin, answers: answers)
                routes.register(in: &router)
                liveViews[name] = routes.liveViews
            case .pages(let settings):
                let pages = PagedListResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                let routes = PagedListRoutes(
                    resource: pages, argument: settings.loadMoreArgument, streams: streams, directory: directory,
                    cluster: clusterLink, admin: admin, answers: answers)
                routes.register(in: &router)
                liveViews[name] = routes.liveViews
            case .search(let settings):
                let search = SearchResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                let routes = SearchRoutes(resource: search, streams: streams, scheduler: EventLoopScheduler(loop: loop), answers: answers)
                routes.register(in: &router)
                liveViews[name] = routes.liveViews
            }
        }
        EventsRoutes(views: liveViews, streams: streams).register(in: &router)
        if firstWorkerShares == nil { shares = Shares(live: owned, cluster: clusterLink, staleSnapshots: staleSnapshots) }
        StreamControlRoutes(directory: directory, cluster: clusterLink, loop: loop).register(in: &router)
        OperationsRoutes(openAPIDocument: Snapshot(OpenAPIDocument(configuration).json)).register(in: &router)
    }

    private func makeUpstreams() -> [String: Upstream] {
        var upstreams: [String: Upstream] = [:]
        let limits = configuration.poolLimitsPerWorker
        for (name, settings) in configuration.upstreams {
            let limit = limits[settings.url.origin]!
            client.setPoolLimits(capacity: limit.capacity, maxQueue: limit.maxQueue, for: settings.url)
            upstreams[name] = Upstream(name: name, base: settings.url, policy: settings.policy, client: client)
        }
        return upstreams
    }

    private func route(_ request: ServerRequest) {
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
