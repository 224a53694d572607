public import Aggregation
import HTTPServer
public import UpstreamClient
public import Redis

/// Everything Tributary is told: where to listen, which upstreams exist and how to call them,
/// and which resources to serve from them. Read from `config/tributary.yaml`, then
/// overridden by environment variables, then by command-line options (see ``load(_:)``);
/// every key, its default and its override are listed in docs/configuration.md.
public struct Configuration: Sendable {
    public var server = Server()
    public var sse = EventStreams()
    /// `cluster:` — nil unless `cluster.redis` (or `TRIBUTARY_REDIS_URL`, `--redis`) is set.
    public var cluster: Cluster?
    /// A file's `cluster:` settings waiting for the Redis from the environment or the command line.
    var clusterWithoutRedis: Cluster?
    /// `TRIBUTARY_CLUSTER_SECRET`, for the cluster the Redis from the command line may still make.
    var clusterSecretFromEnvironment: ClusterSecret?
    public var upstreams: [String: UpstreamSettings] = [:]
    public var resources: [String: Resource] = [:]
    /// `auth:` — bearer tokens (JWT) and the default of every resource's `auth.required`.
    public var auth = Auth()
    /// `resources.<name>.auth` and `.rateLimit`, by resource name (those that set neither
    /// are absent): see ``access(of:)`` for what applies.
    public var resourceAccess: [String: ResourceAccessSettings] = [:]

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
        /// `listen`, `TRIBUTARY_LISTEN`, `--listen`: `HOST:PORT`.
        public var listen = ListenAddress(host: "127.0.0.1", port: 8080)
        /// `workers`, `TRIBUTARY_WORKERS`, `--workers`: event loops, one thread each
        /// (`auto` in the file or the environment: one per online processor).
        public var workers = 1
        /// `logLevel`, `TRIBUTARY_LOG_LEVEL`, `--log-level`.
        public var logLevel = "info"
        /// `requestTimeout`: how long a client may take to send a request.
        public var requestTimeout: Duration = .seconds(60)
        /// `maxHeaderBytes`: larger request headers get 431.
        public var maxHeaderBytes = 16 * 1024
        /// `maxBodyBytes`: larger request bodies get 413.
        public var maxBodyBytes = 1024 * 1024
        /// `maxConnections`: client connections per worker, event streams included; beyond
        /// it, 503. Above `sse.maxSubscribers`, so a worker full of streams still answers.
        public var maxConnections = 12_000
        /// `shutdownTimeout`: how long a stop waits for requests in flight.
        public var shutdownTimeout: Duration = .seconds(10)
        /// `adminToken`, `TRIBUTARY_ADMIN_TOKEN`: when set, `POST /<name>/reload` needs
        /// `Authorization: Bearer <token>`.
        public var adminToken: String?
        /// `corsOrigins`, `TRIBUTARY_CORS_ORIGINS` (comma-separated): origins whose pages may
        /// call the service (`*`: any).
        public var corsOrigins: [String] = []
        /// `maxIdentities`: identities with live pipelines in the process at once (each client
        /// of a per-identity resource has pipelines of its own); beyond it, a new identity's
        /// stream gets 503 `too_many_identities`.
        public var maxIdentities = 10_000
        /// `staleIfErrorBytes`: what the whole process may keep of last good documents for
        /// `staleIfError`; beyond it, those fetched longest ago are dropped.
        public var staleIfErrorBytes = 64 * 1024 * 1024
        /// `rateLimit: {rate, burst, by}`: every resource's limit unless its own says
        /// otherwise, stream control's too; nil: no limit.
        public var rateLimit: RateLimit?
        /// `trustedProxies`: the proxies (CIDRs) whose `X-Forwarded-For` names the client.
        public var trustedProxies: [AddressRange] = []
        /// `maxStreamsPerClient`: open streams of one client in the process (default 32,
        /// rate limit or not: ``Configuration/streamsPerClient``); nil: not set.
        public var maxStreamsPerClient: Int?
        /// `maxClientSharePercent` (default 10): the share of each resource's
        /// `maxLivePipelines`, and of `maxIdentities`, that one client may start (at least
        /// one each), so that no client can take them all and lock the others out.
        public var maxClientSharePercent = 10
        /// `maxRateLimitBuckets` (default 100,000): rate-limit buckets (one per client and
        /// policy) the process keeps; a new one takes the place of the least recently seen.
        public var maxRateLimitBuckets = LocalRateLimiter.defaultCapacity

        public init() {}

        var limits: HTTPServer.Limits {
            HTTPServer.Limits(
                maxHeaderBytes: maxHeaderBytes, maxBodyBytes: maxBodyBytes, timeout: requestTimeout, maxConnections: maxConnections)
        }
    }

    /// `sse:` — server-sent event streams.
    public struct EventStreams: Sendable, Equatable {
        /// `heartbeat`: a comment line this often keeps proxies from closing quiet streams.
        public var heartbeat: Duration = .seconds(15)
        /// `retry`: the reconnection delay sent to clients (the `retry:` field).
        public var retry: Duration = .seconds(2)
        /// `sendBuffer`: the kernel send buffer of each stream's socket, in bytes: what a
        /// client that stops reading can hold, beyond the one event waiting for it.
        public var sendBuffer = 64 * 1024
        /// `maxSubscribers`: live streams per worker; beyond it, 503.
        public var maxSubscribers = 10_000

        public init() {}
    }

    /// `cluster:` — replicas coordinated through Redis (docs/fleet.md).
    public struct Cluster: Sendable, Equatable {
        /// `redis`, `TRIBUTARY_REDIS_URL`, `--redis`: `redis://HOST:PORT[/DB]`.
        public var redis: RedisEndpoint
        /// `leaseTTL`: how long a replica's lease on a shared live resource lasts unless
        /// renewed (every third of it); a dead holder's lease passes on within it.
        public var leaseTTL: Duration = .seconds(3)
        /// `keyPrefix`: the prefix of every Redis key and channel, so several fleets can share
        /// one Redis.
        public var keyPrefix = "tributary"
        /// `secret`, `TRIBUTARY_CLUSTER_SECRET` (required with `redis`): every message and
        /// value a replica writes to Redis is signed with it, and anything that fails its
        /// signature is dropped (docs/fleet.md). Replicas with another secret are another fleet.
        public var secret: ClusterSecret?

        public init(redis: RedisEndpoint) {
            self.redis = redis
        }
    }

    /// `upstreams.<name>:` — one upstream API.
    public struct UpstreamSettings: Sendable, Equatable {
        /// `url` (required), `TRIBUTARY_UPSTREAM_<NAME>`, `--upstream NAME=URL`.
        public var url: BaseURL
        /// `timeout`, `retries`, `backoff`, `maxResponseBytes`: see ``Upstream/Policy``.
        public var policy = Upstream.Policy()
        /// `poolSize`: keep-alive connections to this upstream from the whole process (connecting,
        /// busy and idle), so adding workers does not multiply what the upstream has to hold. The
        /// workers share it as a budget: a busy worker may use all of it while the others do not
        /// need it, and busy workers share it in proportion to their calls (see ``ConnectionBudgets``).
        public var poolSize = 64
        /// `maxQueue`: calls that may wait for a connection to this upstream in each worker;
        /// beyond it a call fails at once, 503 `upstream_saturated`, instead of queueing
        /// without bound while the upstream is slow.
        public var maxQueue = 10_000
        /// `circuitBreaker: {failures, openFor}` (or `enabled: false`): see ``CircuitBreaker``.
        public var circuitBreaker = CircuitBreaker.Settings()
        /// `headers`: sent on every call to this upstream (an API key, a service token),
        /// `${VAR}` expanded from the environment. Their values are secrets.
        public var headers: [UpstreamHeader] = []
        /// `forward`: the client's request headers (`Authorization`, `Cookie`) sent on every
        /// call to this upstream that the request causes; a resource of this upstream is then
        /// per identity.
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
        let value: String

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
        /// `route` (default `/<name>`): segments, some of them `{parameter}`.
        public var route: String
        /// `parameters`, in name order.
        public var parameters: [ParameterDefinition] = []

        public init(route: String, parameters: [ParameterDefinition] = []) {
            self.route = route
            self.parameters = parameters
        }
    }

    /// `resources.<name>.coalesce` and `.staleIfError`, the same for every kind: how the
    /// resource's JSON answers (not its streams) are made when many ask at once or an
    /// upstream fails (``JSONAnswers``).
    public struct JSONAnswerSettings: Sendable, Equatable {
        /// `coalesce` (default true): identical JSON GETs in flight at once on a worker share
        /// one run of the pipeline, so 50 clients cost the upstream one fetch, not 50.
        public var coalesce = true
        /// `staleIfError` (default off): when a fetch fails, answer the last good document of
        /// the same URL if it was fetched no longer ago than this, marked stale.
        public var staleIfError: Duration?

        public init(coalesce: Bool = true, staleIfError: Duration? = nil) {
            self.coalesce = coalesce
            self.staleIfError = staleIfError
        }
    }

    /// A `kind: list` resource.
    public struct ListSettings: Sendable, Equatable {
        /// `upstream` (required): the name of an entry in `upstreams`.
        public var upstream: String
        /// `route`, `parameters`.
        public var routing: Routing
        /// `maxLivePipelines` (default 1000): shared live pipelines of the resource in the
        /// process at once, one per combination of parameter values and identity; a stream
        /// that would need one more gets 503 `too_many_pipelines`.
        public var maxLivePipelines = 1000
        /// `list`, `details`, `concurrency`, `onItemFailure`.
        public var definition: ListResource.Definition
        /// `refreshInterval`: how often live streams refresh (also on `POST /<name>/reload`).
        public var refreshInterval: Duration = .seconds(5)
        /// `coalesce`, `staleIfError`.
        public var answers = JSONAnswerSettings()
    }

    /// A `kind: pages` resource.
    public struct PagesSettings: Sendable, Equatable {
        /// `upstream` (required).
        public var upstream: String
        /// `route`, `parameters`.
        public var routing: Routing
        /// `list`, `pages`, `row`, `concurrency`.
        public var definition: PagedListResource.Definition
        /// `loadMoreArgument`: the query parameter of the `loadMore` trigger naming the item.
        public var loadMoreArgument = "topic"
        /// `coalesce`, `staleIfError`.
        public var answers = JSONAnswerSettings()
    }

    /// A `kind: search` resource.
    public struct SearchSettings: Sendable, Equatable {
        /// `upstream` (required).
        public var upstream: String
        /// `route`, `parameters` (besides the search's own query parameter).
        public var routing: Routing
        /// `path`, `parameter`, `items`, `minimumLength`, `debounce`.
        public var definition: SearchResource.Definition
        /// `coalesce`, `staleIfError`.
        public var answers = JSONAnswerSettings()
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
