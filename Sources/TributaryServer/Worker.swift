import Aggregation
public import Libevent
public import Logging

/// Everything one event loop serves: the HTTP server, the upstream client and its pools, the
/// resources from the configuration, their shared live pipelines and event streams, and the
/// routes to them. Several workers (one per thread) may share a port. Loop-confined.
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
    private(set) var router = Router<(ServerRequest) -> Void>()
    private var liveResources: [String: LiveResource] = [:]

    public init(configuration: Configuration, loop: EventLoop, logger: Logger) throws {
        self.loop = loop
        self.configuration = configuration
        self.logger = logger
        client = UpstreamClient(loop: loop)
        streams = EventStreamHub(loop: loop, settings: configuration.sse)
        server = try HTTPServer(loop: loop, limits: configuration.server.limits) { _ in }
        let upstreams = makeUpstreams()
        for (name, resource) in configuration.resources.sorted(by: { $0.key < $1.key }) {
            switch resource {
            case .list(let settings):
                let list = ListResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                let live = LiveResource(name: name, refreshInterval: settings.refreshInterval, loop: loop, snapshot: list.snapshot)
                liveResources[name] = live
                ListResourceRoutes(resource: list, live: live, streams: streams).register(in: &router)
            case .pages(let settings):
                let pages = PagedListResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                PagedListRoutes(resource: pages, argument: settings.loadMoreArgument, streams: streams).register(in: &router)
            case .search(let settings):
                let search = SearchResource(name: name, upstream: upstreams[settings.upstream]!, definition: settings.definition)
                SearchRoutes(resource: search, streams: streams, scheduler: EventLoopScheduler(loop: loop)).register(in: &router)
            }
        }
        StreamControlRoutes(streams: streams).register(in: &router)
        router.add(.get, "/healthz") { request in request.respond(status: 200, json: #"{"status":"ok"}"#) }
        server.handler = { [unowned self] request in route(request) }
    }

    /// Listens on the configured address (SO_REUSEPORT when several workers share it);
    /// returns the bound port.
    @discardableResult
    public func bind(reusePort: Bool = false) throws -> UInt16 {
        let listen = configuration.server.listen
        return try server.bind(host: listen.host, port: listen.port, reusePort: reusePort)
    }

    /// Stops accepting connections and ends every event stream.
    public func shutDown() {
        server.stopAccepting()
        streams.finishAll()
    }

    private func makeUpstreams() -> [String: Upstream] {
        var upstreams: [String: Upstream] = [:]
        for (name, settings) in configuration.upstreams {
            client.setPoolCapacity(settings.poolSize, for: settings.url)
            upstreams[name] = Upstream(name: name, base: settings.url, policy: settings.policy, client: client)
        }
        return upstreams
    }

    private func route(_ request: ServerRequest) {
        switch router.match(request.method, path: request.path) {
        case .found(let handle, let parameters):
            request.parameters = parameters
            handle(request)
        case .methodNotAllowed(let allowed):
            let names = allowed.map(\.rawValue).joined(separator: ", ")
            request.respond(.methodNotAllowed("\(request.method.rawValue) is not allowed on \(request.path) (allowed: \(names))"),
                            headers: [("Allow", names)])
        case .notFound:
            request.respond(.notFound("no resource at \(request.path)"))
        }
    }
}
