import AccessControl
import Aggregation
public import EventLoop
import HTTPServer
import UpstreamClient
import Telemetry
public import Logging
public import TributaryConfiguration

/// Everything one event loop serves: the HTTP server, the upstream client and its pools, the
/// resources from the configuration, their live streams, and the routes to them. Several
/// workers (one per thread) share a port; they are alike, and share the process's
/// ``ProcessShares`` (live pipelines, breakers, budgets, the fleet). Each runs the shared live
/// pipelines whose keys fall to it (``LivePipelines``). Loop-confined.
///
/// ```swift
/// let shares = ProcessShares(configuration: configuration, loop: loop, logger: logger)
/// let worker = try Worker(configuration: configuration, loop: loop, logger: logger, shares: shares)
/// try worker.bind()
/// try loop.run()
/// ```
public final class Worker {
    public let loop: EventLoop
    /// The configuration it serves: the one it started with, or the last reload applied.
    public private(set) var configuration: Configuration
    /// What it shares with the process's other workers.
    public let shares: ProcessShares
    let logger: Logger
    let server: HTTPServer
    let client: UpstreamClient
    let streams: EventStreamHub
    /// Its followers of the process's shared live pipelines.
    private let pipelines: WorkerPipelines
    /// Its open batch windows (`details.batchWindow`), shared by its requests and pipelines.
    private let batchWindows = BatchWindows()
    private var cors: CORSPolicy
    private let observer: RequestObserver
    private let connections: ConnectionObserver
    /// Tokens and rate limits, for every route that reads them.
    let gate: AccessGate
    private var router = Router<Route>()
    private var shutdown: (done: () -> Void, deadline: LoopTimer)?
    private var drainCheck: LoopTimer?

    /// A worker on `loop` serving `configuration`, sharing `shares` with the process's other
    /// workers; without, it makes shares of its own, on its loop (a process of one worker).
    public init(configuration: Configuration, loop: EventLoop, logger: Logger, shares: ProcessShares? = nil) throws {
        _ = MetricsExport.registry  // metrics exist before any handle is made
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        let shares = shares ?? ProcessShares(configuration: configuration, loop: loop, logger: logger)
        self.shares = shares
        client = UpstreamClient(loop: loop, configuration: .init(connectionBudgets: shares.connectionBudgets, spans: shares.spans))
        pipelines = WorkerPipelines(loop: loop, registry: shares.pipelines, clientSharePercent: configuration.server.maxClientSharePercent)
        streams = EventStreamHub(loop: loop, settings: configuration.sse, directory: shares.directory, cluster: shares.cluster)
        cors = CORSPolicy(allowedOrigins: Set(configuration.server.corsOrigins))
        gate = AccessGate(
            loop: loop, verifier: shares.tokens, local: shares.rateLimits, quota: shares.streamQuota, hasher: shares.identities,
            configuration: configuration)
        streams.gate = gate
        observer = RequestObserver(logger: logger)
        connections = ConnectionObserver(logger: logger)
        server = try HTTPServer(loop: loop, limits: configuration.server.limits) { _ in }
        registerRoutes(ending: [:])
        server.handler = { [unowned self] request in route(request) }
        server.onComplete = { [unowned self] request in completed(request) }
        server.onConnectionCountChange = { [unowned self] count in connections.connectionCountChanged(to: count) }
        server.onAcceptPaused = { [unowned self] code in connections.acceptPaused(code) }
    }

    /// Closes the server first, while the rest of the worker is whole: closing a connection
    /// ends its open request, and an event stream's request calls back into its
    /// ``EventStream`` (held by ``streams``, destroyed after the server). Left to the server's
    /// own `deinit`, that happened whenever the server's last reference went: a request
    /// answering on the loop holds the server while it answers, so the server could outlive
    /// this worker, and its connections' close callbacks reached event streams already gone
    /// (a trap on their `unowned self`). The server's callbacks into this worker go first:
    /// they are `unowned`, and this worker is being destroyed.
    deinit {
        server.handler = { _ in }
        server.onComplete = nil
        server.onConnectionCountChange = nil
        server.onAcceptPaused = nil
        server.close()
    }

    /// Listens on the configured address, or on `port` if given (SO_REUSEPORT when several
    /// workers share it); returns the bound port.
    @discardableResult
    public func bind(port: UInt16? = nil, reusePort: Bool = false) throws -> UInt16 {
        let listen = configuration.server.listen
        let bound = try server.bind(host: listen.host, port: port ?? listen.port, reusePort: reusePort)
        shares.readiness.listening()
        return bound
    }

    /// Stops gracefully: no new connections, every event stream ended, and `done` once the
    /// requests in flight are answered and every answer has left (or `deadline` passed).
    public func shutDown(within deadline: Duration, then done: @escaping () -> Void) {
        shares.readiness.draining()
        server.stopAccepting()
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
        /// Its access policy, which a reload updates in place.
        let door: ResourceDoor
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
    /// change keeps its routes, pipelines and live streams untouched; the streams of one that
    /// was removed or changed end with `resource_removed` or `resource_changed`. What the
    /// workers share takes it up around them (``ProcessShares/willApply(_:ending:)``).
    public func apply(_ configuration: Configuration) {
        let endings = ProcessShares.endings(from: self.configuration, to: configuration)
        self.configuration = configuration
        cors = CORSPolicy(allowedOrigins: Set(configuration.server.corsOrigins))
        admin.token = configuration.server.adminToken
        gate.trustedProxies = configuration.server.trustedProxies
        gate.streamsPerClient = configuration.streamsPerClient
        pipelines.clientSharePercent = configuration.server.maxClientSharePercent
        registerRoutes(ending: endings)
    }

    /// Builds the router from ``configuration``: unmounts the resources in `endings` (removed
    /// or changed) and ends their streams, mounts every resource not mounted yet, and adds the
    /// endpoints that list the resources (`/events`, `/openapi.json`).
    private func registerRoutes(ending endings: [String: ResourceEnding]) {
        updateUpstreams()
        for name in endings.keys { mounted[name] = nil }
        streams.end(endings)
        for name in configuration.resources.keys.sorted() {
            if let kept = mounted[name] {
                kept.door.policy = AccessPolicy(resource: name, configuration)
            } else {
                mounted[name] = mount(name)
            }
        }
        // Weakly: a pipeline first followed after this worker stopped ends at once.
        shares.pipelines.setRunner(LoopBound({ [weak self] pipeline in self?.makePipeline(pipeline) ?? EndedLiveSource(name: pipeline.key.resource) }, loop: loop))
        var router = Router<Route>()
        for name in mounted.keys.sorted() { mounted[name]!.register(&router) }
        EventsRoutes(
            views: mounted.mapValues(\.liveViews), streams: streams, gate: gate,
            accesses: Dictionary(uniqueKeysWithValues: mounted.keys.map { ($0, configuration.access(of: $0)) })
        ).register(in: &router)
        StreamControlRoutes(
            directory: shares.directory, cluster: shares.cluster, loop: loop, gate: gate, policy: .streamControl(configuration)
        ).register(in: &router)
        OperationsRoutes(
            readiness: shares.readiness, openAPIDocument: Snapshot(OpenAPIDocument(configuration).json), page: IndexPage.page(parameterized: pageParameterized)
        ).register(in: &router)
        self.router = router
    }

    /// The list resource the live page shows with a box for its value: the first, by name,
    /// whose route takes exactly one parameter (the shipped `teamgroups`).
    private var pageParameterized: (resource: String, parameter: String)? {
        for name in configuration.resources.keys.sorted() {
            guard case .list(let settings) = configuration.resources[name],
                  let only = settings.routing.parameters.filter({ $0.location == .path }).first,
                  settings.routing.parameters.filter({ $0.location == .path }).count == 1 else { continue }
            return (name, only.name)
        }
        return nil
    }

    /// Makes resource `name`'s routes from ``configuration``.
    private func mount(_ name: String) -> MountedResource {
        let resource = configuration.resources[name]!
        let definition = configuration.definition(of: name)!
        let upstream = upstreams[resource.upstream]!.upstream
        let requests: ResourceRequestReader
        do {
            requests = try ResourceRequestReader(
                resource: name, routing: resource.routing, forwarding: upstream.forwardedHeaderNames,
                authRequired: configuration.access(of: name).authRequired, hasher: shares.identities)
        } catch {
            preconditionFailure("resources.\(name).parameters: the configuration checked every pattern, yet \(error)")
        }
        let answers = JSONAnswers(
            resource: name, settings: resource.answers, privately: requests.isPerIdentity, staleSnapshots: shares.staleSnapshots)
        let door = ResourceDoor(gate: gate, policy: AccessPolicy(resource: name, configuration))
        func mounted<Kind: ServedKind>(_ kind: Kind) -> MountedResource {
            let routes = ResourceRoutes(
                name: name, route: resource.routing.route, kind: kind, requests: requests, streams: streams, admin: admin,
                answers: answers, door: door)
            return MountedResource(definition: definition, register: routes.register(in:), liveViews: routes.liveViews, door: door)
        }
        switch resource {
        case .list(let settings):
            return mounted(ListKind(
                name: name, settings: settings, definition: definition, upstream: upstream, pipelines: pipelines,
                details: detailSharing(of: name, definition), reload: reloader(of: name)))
        case .pages(let settings):
            return mounted(PagesKind(name: name, settings: settings, upstream: upstream, reload: reloader(of: name)))
        case .search(let settings):
            return mounted(SearchKind(name: name, settings: settings, upstream: upstream, scheduler: EventLoopScheduler(loop: loop)))
        }
    }

    /// How `POST /<name>/reload[?team=core]` refreshes resource `name`, and what it counts:
    /// the live pipelines whose parameter values hold those given, every identity's: the
    /// process's shared pipelines of a list resource, or the streams of a kind whose streams
    /// have pipelines of their own (`reload` trigger), on every worker. Through the fleet when
    /// there is one: every replica refreshes its own, and the count is this replica's (each
    /// of its pipelines refreshed by whichever replica runs it; one only other replicas
    /// follow is refreshed, not counted).
    private func reloader(of name: String) -> @Sendable (ParameterValues) -> Int {
        let targets: any ReloadTargets = if case .list = configuration.resources[name] { shares.pipelines } else { shares.directory }
        guard let cluster = shares.cluster else { return { values in targets.reload(ReloadAim(resource: name, values: values)) } }
        return { values in
            let aim = ReloadAim(resource: name, values: values)
            cluster.reload(aim)
            return targets.count(aim)
        }
    }

    /// A shared live pipeline of a `kind: list` resource that falls to this worker, made on its
    /// loop: the resource for the pipeline's parameter values and caller, refreshed on its
    /// interval, its calls through this worker's client and batch windows.
    private func makePipeline(_ pipeline: SharedPipeline) -> any LiveSource {
        guard case .list(let settings) = pipeline.definition.resource else {
            preconditionFailure("shared live pipelines are of list resources only")
        }
        let name = pipeline.key.resource
        let upstream = upstreams[settings.upstream].flatMap { Self.sameCalls($0.settings, pipeline.definition.upstream) ? $0.upstream : nil }
            ?? makeUpstream(settings.upstream, pipeline.definition.upstream)
        let list = ListResource(
            name: name, upstream: upstream, definition: settings.definition, parameters: pipeline.request.parameters,
            caller: pipeline.request.caller, sharing: detailSharing(of: name, pipeline.definition), revalidates: true)
        let window = configuration.sse.progressiveWindow
        return LiveResource(
            name: name, refreshInterval: settings.refreshInterval, loop: loop, spans: spans, snapshot: list.snapshot(trace:),
            firstDocument: { [loop] trace in list.progressiveSnapshot(trace: trace, loop: loop, window: window) },
            reusedDocument: { list.reusedLastDocument })
    }

    /// What the snapshots of list resource `name` share about details on this worker: its
    /// batch windows and the process's detail cache of the resource as `definition` says.
    private func detailSharing(of name: String, _ definition: Configuration.ResourceDefinition) -> DetailSharing? {
        guard case .list(let settings) = definition.resource else { return nil }
        return DetailSharing(
            resource: name, definition: settings.definition, windows: batchWindows,
            cache: shares.detailCaches.cache(for: name, definition: definition))
    }

    /// Makes an ``Upstream`` for each upstream new or changed in ``configuration`` (a
    /// `poolSize` or `maxQueue` alone changes the pool, not the upstream), with the process's
    /// circuit breaker for it, sets the connection pool limits of every origin, and retires
    /// the pools of origins no upstream names any more (their connections close).
    private func updateUpstreams() {
        client.retirePools(keeping: Set(configuration.upstreams.values.map(\.url.origin)))
        for (origin, limit) in configuration.poolLimits {
            guard let url = configuration.upstreams.values.first(where: { $0.url.origin == origin })?.url else { continue }
            client.setPoolLimits(capacity: limit.capacity, maxQueue: limit.maxQueue, for: url)
        }
        var updated: [String: (settings: Configuration.UpstreamSettings, upstream: Upstream)] = [:]
        for (name, settings) in configuration.upstreams {
            if let known = upstreams[name], Self.sameCalls(known.settings, settings) {
                updated[name] = (settings, known.upstream)
            } else {
                updated[name] = (settings, makeUpstream(name, settings))
            }
        }
        upstreams = updated
    }

    private func makeUpstream(_ name: String, _ settings: Configuration.UpstreamSettings) -> Upstream {
        Upstream(
            name: name, base: settings.url, policy: settings.policy, headers: settings.headers.map { ($0.name, $0.value) },
            forward: settings.forward, client: client, breaker: shares.breakers.breaker(for: name, settings: settings.circuitBreaker))
    }

    /// Whether two settings of an upstream call it the same way (pool limits aside).
    private static func sameCalls(_ a: Configuration.UpstreamSettings, _ b: Configuration.UpstreamSettings) -> Bool {
        var b = b
        b.poolSize = a.poolSize
        b.maxQueue = a.maxQueue
        return a == b
    }

    /// Where requests, calls and refreshes record their spans; nil: tracing is off.
    private var spans: Spans? { shares.spans }

    private func route(_ request: ServerRequest) {
        // Fixed while its headers are at hand: its upstream calls and its log line carry it.
        _ = request.traceContext
        request.responseHeaders = cors.headers(for: request)
        if cors.isPreflight(request) {
            request.route = "preflight"
            return cors.answerPreflight(request)
        }
        let match = router.match(request.method, path: request.path)
        if case .found(let route, let parameters) = match {
            request.route = route.pattern
            request.parameters = parameters
        }
        // Named by the route it matched, before its handler makes any upstream call.
        if let spans { request.adopt(spans.server(for: request)) }
        switch match {
        case .found(let route, _):
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

extension Configuration.Server {
    /// The HTTP server's limits: `maxHeaderBytes`, `maxBodyBytes`, `requestTimeout`, `maxConnections`.
    var limits: HTTPServer.Limits {
        HTTPServer.Limits(
            maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes, timeout: requestTimeout, maxConnections: maxConnections)
    }
}
