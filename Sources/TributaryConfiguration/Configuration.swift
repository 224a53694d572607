public import Aggregation
public import UpstreamClient
public import Redis

/// Everything Tributary is told: where to listen, which upstreams exist and how to call them,
/// and which resources to serve from them. Read from `config/tributary.yaml`, then
/// overridden by environment variables, then by command-line options (see ``load(yaml:file:environment:overrides:)``).
///
/// Each field below holds one section of the file, or one setting; a setting's default is
/// its initial value here. Its key, range, override, reload rule and meaning are declared
/// once, in ``Settings`` (Settings.swift), which docs/configuration.md is generated from.
public struct Configuration: Sendable {
    public var server = Server()
    public var sse = EventStreams()
    /// `cluster:` — nil unless `cluster.redis` (or `TRIBUTARY_REDIS_URL`, `--redis`) is set.
    public var cluster: Cluster?
    public var upstreams: [String: UpstreamSettings] = [:]
    public var resources: [String: Resource] = [:]
    /// `auth:` — bearer tokens (JWT) and the default of every resource's `auth.required`.
    public var auth = Auth()
    /// `resources.<name>.auth` and `.rateLimit`, by resource name (those that set neither
    /// are absent): see ``access(of:)`` for what applies.
    public var resourceAccess: [String: ResourceAccessSettings] = [:]
    /// `telemetry:` — traces and metrics over OTLP.
    public var telemetry = Telemetry()

    public init() {}

    /// How many connections the workers' pools for an upstream origin may hold together (a
    /// budget they lend each other: see ``ConnectionBudgets``), and how many calls may wait
    /// for one in each worker. Upstreams on one origin share its pools (their connections are
    /// interchangeable), which get the largest of their values whatever order the file lists
    /// them in.
    public var poolLimits: [BaseURL.Origin: (capacity: Int, maxQueue: Int)] {
        var limits: [BaseURL.Origin: (capacity: Int, maxQueue: Int)] = [:]
        for upstream in upstreams.values {
            let known = limits[upstream.url.origin] ?? (0, 0)
            limits[upstream.url.origin] = (max(known.capacity, upstream.poolSize), max(known.maxQueue, upstream.maxQueue))
        }
        return limits
    }

    /// `server:` — the HTTP server.
    public struct Server: Sendable, Equatable {
        public var listen = ListenAddress(host: "127.0.0.1", port: 8080)
        /// Event loops, one thread each (`auto` in the file or the environment: one per online processor).
        public var workers = 1
        /// One of ``Configuration/logLevels``.
        public var logLevel = "info"
        public var logFormat = LogFormat.text
        public var requestTimeout: Duration = .seconds(60)
        public var maxHeaderBytes = 16 * 1024
        public var maxBodyBytes = 1024 * 1024
        public var maxConnections = 12_000
        public var shutdownTimeout: Duration = .seconds(10)
        /// When set, `POST /<name>/reload` needs `Authorization: Bearer <token>`.
        public var adminToken: String?
        public var corsOrigins: [String] = []
        public var maxIdentities = 10_000
        public var staleIfErrorBytes = 64 * 1024 * 1024
        /// Every resource's limit unless its own says otherwise, stream control's too; nil: no limit.
        public var rateLimit: RateLimit?
        public var trustedProxies: [AddressRange] = []
        /// Always bounded, rate limit or not: each stream may hold a live pipeline (of its
        /// parameter values, of its identity), and a client holding a thousand would lock
        /// every other client out of them.
        public var maxStreamsPerClient = 32
        /// So that no client can take every live pipeline or identity and lock the others out.
        public var maxClientSharePercent = 10
        public var maxRateLimitBuckets = 100_000

        public init() {}
    }

    /// `sse:` — server-sent event streams.
    public struct EventStreams: Sendable, Equatable {
        public var heartbeat: Duration = .seconds(15)
        public var retry: Duration = .seconds(2)
        /// The kernel send buffer of each stream's socket, in bytes: what a client that stops
        /// reading can hold, beyond the one event waiting for it.
        public var sendBuffer = 64 * 1024
        public var maxSubscribers = 10_000
        /// A progressive first document's window: arrivals within it go as one event.
        public var progressiveWindow: Duration = .milliseconds(25)

        public init() {}
    }

    /// `cluster:` — replicas coordinated through Redis (docs/fleet.md).
    public struct Cluster: Sendable, Equatable {
        public var redis: RedisEndpoint
        public var leaseTTL: Duration = .seconds(3)
        public var keyPrefix = "tributary"
        /// Required with `redis`: every message and value a replica writes to Redis is signed
        /// with it, and anything that fails its signature is dropped (docs/fleet.md).
        public var secret: ClusterSecret?

        public init(redis: RedisEndpoint) {
            self.redis = redis
        }
    }

    /// `upstreams.<name>:` — one upstream API.
    public struct UpstreamSettings: Sendable, Equatable {
        public var url: BaseURL
        /// `timeout`, `retries`, `backoff`, `maxResponseBytes` (their defaults: ``Upstream/Policy``'s).
        public var policy = Upstream.Policy()
        /// For the whole process, so adding workers does not multiply what the upstream has to
        /// hold: a budget the workers lend each other (``ConnectionBudgets``).
        public var poolSize = 64
        /// Per worker: beyond it a call fails at once instead of queueing without bound while
        /// the upstream is slow.
        public var maxQueue = 10_000
        /// `circuitBreaker: {failures, openFor, enabled}` (defaults: ``CircuitBreaker/Settings``'s).
        public var circuitBreaker = CircuitBreaker.Settings()
        /// `${VAR}` expanded from the environment. Their values are secrets.
        public var headers: [UpstreamHeader] = []
        /// A resource of an upstream that forwards headers is per identity.
        public var forward: [String] = []

        public init(url: BaseURL) {
            self.url = url
        }
    }

    /// `upstreams.<name>.headers.<header>`: one header every call to the upstream carries.
    /// Its value is a secret: it describes and mirrors itself without it, so no log line or
    /// dump of a configuration can show it.
    public struct UpstreamHeader: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        public let name: String
        /// The value, `${VAR}` expanded.
        package let value: String

        init(name: String, value: String) {
            self.name = name
            self.value = value
        }

        public var description: String { "\(name): <secret>" }
        public var customMirror: Mirror { Mirror(self, children: ["name": name, "value": "<secret>"]) }
    }

    /// `resources.<name>:` — one resource served at `/<name>`.
    public enum Resource: Sendable, Equatable {
        /// `kind: list` — a list plus per-item details (``ListResource``).
        case list(ListSettings)
        /// `kind: pages` — a list, each item with its paginated sub-list (``PagedListResource``).
        case pages(PagesSettings)
        /// `kind: search` — a query passed to an upstream search (``SearchResource``).
        case search(SearchSettings)

        /// The name of the upstream it calls.
        public var upstream: String {
            switch self {
            case .list(let settings): settings.upstream
            case .pages(let settings): settings.upstream
            case .search(let settings): settings.upstream
            }
        }

        /// How its JSON answers are made: `coalesce`, `staleIfError`.
        public var answers: JSONAnswerSettings {
            switch self {
            case .list(let settings): settings.answers
            case .pages(let settings): settings.answers
            case .search(let settings): settings.answers
            }
        }

        /// Where it is served and what it takes from the client: `route`, `parameters`.
        public var routing: Routing {
            switch self {
            case .list(let settings): settings.routing
            case .pages(let settings): settings.routing
            case .search(let settings): settings.routing
            }
        }
    }

    /// `resources.<name>.route` and `.parameters`, the same for every kind: the path it is
    /// served at, and the parameters a client gives it (from that path, or the query string),
    /// which go into its upstream calls' paths.
    public struct Routing: Sendable, Equatable {
        /// Segments, some of them `{parameter}`.
        public var route: String
        /// In name order.
        public var parameters: [ParameterDefinition] = []
        /// `fields`: the members of each element it serves at all (a client's `fields=` narrows it).
        public var fields: FieldSelection = .everything

        public init(route: String, parameters: [ParameterDefinition] = [], fields: FieldSelection = .everything) {
            self.route = route
            self.parameters = parameters
            self.fields = fields
        }
    }

    /// `resources.<name>.coalesce` and `.staleIfError`, the same for every kind: how the
    /// resource's JSON answers (not its streams) are made when many ask at once or an
    /// upstream fails (``JSONAnswers``).
    public struct JSONAnswerSettings: Sendable, Equatable {
        /// So 50 clients asking at once cost the upstream one fetch, not 50.
        public var coalesce = true
        /// Off unless given (and then longer than zero: leaving it out says "off").
        public var staleIfError: Duration?

        public init(coalesce: Bool = true, staleIfError: Duration? = nil) {
            self.coalesce = coalesce
            self.staleIfError = staleIfError
        }
    }

    /// A `kind: list` resource.
    public struct ListSettings: Sendable, Equatable {
        /// The name of an entry in `upstreams`.
        public var upstream: String
        public var routing: Routing
        public var maxLivePipelines = 1000
        /// `list`, `details`, `concurrency`, `onItemFailure`.
        public var definition: ListResource.Definition
        public var refreshInterval: Duration = .seconds(5)
        public var answers = JSONAnswerSettings()

        /// Every default, before a file's resource fills in its paths and upstream.
        static let defaults = ListSettings(
            upstream: "", routing: Routing(route: ""),
            definition: ListResource.Definition(
                listPath: "/", itemsAt: JSONPath(""), idMember: "id", detailPath: nil, detailAt: JSONPath(""), concurrency: 16,
                onItemFailure: .mark))
    }

    /// A `kind: pages` resource.
    public struct PagesSettings: Sendable, Equatable {
        public var upstream: String
        public var routing: Routing
        /// `list`, `pages`, `row`, `concurrency`.
        public var definition: PagedListResource.Definition
        public var loadMoreArgument = "topic"
        public var answers = JSONAnswerSettings()

        /// Every default, before a file's resource fills in its paths and upstream.
        static let defaults = PagesSettings(
            upstream: "", routing: Routing(route: ""),
            definition: PagedListResource.Definition(
                listPath: "/", itemsAt: JSONPath(""), idMember: "id", pagePath: "/", pageItemsAt: JSONPath(""),
                cursorAt: JSONPath("next"), cursorParameter: "page", rowItemKey: "item", rowPagesKey: "items", concurrency: 8))
    }

    /// A `kind: search` resource.
    public struct SearchSettings: Sendable, Equatable {
        public var upstream: String
        /// `route`, `parameters` (besides the search's own query parameter).
        public var routing: Routing
        /// `path`, `parameter`, `items`, `minimumLength`, `debounce`.
        public var definition: SearchResource.Definition
        public var answers = JSONAnswerSettings()

        /// Every default, before a file's resource fills in its path and upstream.
        static let defaults = SearchSettings(
            upstream: "", routing: Routing(route: ""),
            definition: SearchResource.Definition(
                path: "/", parameter: "q", itemsAt: JSONPath(""), minimumLength: 3, debounce: .milliseconds(300)))
    }
}

/// A `HOST:PORT` to listen on (`[::1]:8080` for IPv6).
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; nil when malformed.
    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.init(host: host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
