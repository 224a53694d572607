import Aggregation
import Redis
import UpstreamClient

/// Every setting Tributary takes, each declared once, here: to add or change one, change its
/// line (and, for a new one, the field it fills). From these declarations come the keys each
/// section allows (an unknown one fails naming what is known there), the reading of every
/// value into ``Configuration`` with its range, the environment variables and command-line
/// options that override the file, what a reload applies and what only a restart does, the
/// `--help` of those options, and the tables of docs/configuration.md (a test compares them).
///
/// A ``Field`` is a value read into a field of its section's type; its default is that
/// type's initial value (``SettingsSection/defaults``). A ``Setting`` alone is a key a
/// hand-written reader takes: a section, a list of mappings, a path checked against the
/// resource's parameters (Configuration+Resources.swift, +Upstreams.swift, +AccessLoading.swift).
enum Settings {
    /// Every key, in the docs' order.
    static let all: [Setting] =
        Configuration.Server.fields.map { $0.setting.under("server") }
        + rateLimit(under: "server.rateLimit", default: "off",
                    "`{rate: 20/s, burst: 40, by: identity}`: a GCRA limit of every resource's answers and stream opens and of stream control, per client, for the whole process (in a fleet, for the whole fleet through Redis, each replica alone while Redis is away). Over it: 429 `rate_limited` with `Retry-After` (see [api.md](api.md), \"Authentication and rate limits\")")
        + Configuration.EventStreams.fields.map { $0.setting.under("sse", reload: .restart) }
        + Configuration.Cluster.fields.map { $0.setting.under("cluster", reload: .restart) }
        + Configuration.OTLPSettings.fields.map { $0.setting.under("telemetry.otlp", reload: .restart) }
        + Configuration.Auth.fields.map { $0.setting.under("auth") }
        + Configuration.JWTSettings.fields.map { $0.setting.under("auth.jwt", reload: .restart) }
        + jwtKeys.map { $0.under("", reload: .restart) }
        + [upstreamURL] + Configuration.UpstreamSettings.fields.map { $0.setting.under("upstreams.*") }
        + upstreamStructure
        + resourceStructure + Configuration.JSONAnswerSettings.fields.map { $0.setting.under("resources.*") }
        + resourceAccess
        + listStructure + Configuration.ListSettings.fields.map { $0.setting.under("resources.*", kinds: [.list]) }
        + DetailBatch.fields.map { $0.setting.under("resources.*.details.batch", kinds: [.list]) }
        + pagesStructure + Configuration.PagesSettings.fields.map { $0.setting.under("resources.*", kinds: [.pages]) }
        + searchStructure + Configuration.SearchSettings.fields.map { $0.setting.under("resources.*", kinds: [.search]) }

    /// What a reload keeps of the running configuration, by key: the server's restart-only
    /// fields, and the sections made once at start (the event stream hub's timer and limits,
    /// the fleet's link, the keys and verified tokens).
    static let restartOnly: [RestartRule] =
        Configuration.Server.fields.filter { $0.setting.reload == .restart }.compactMap { field in
            field.rule.map { rule in
                RestartRule(key: "server.\(field.setting.key)", differs: { rule.differs($0.server, $1.server) },
                            keep: { rule.keep(&$0.server, $1.server) })
            }
        }
        + [RestartRule("sse", \.sse), RestartRule("cluster", \.cluster), RestartRule("auth.jwt", \.auth.jwt),
           RestartRule("telemetry", \.telemetry)]

    /// The declared range of the key at `pattern` (`*` for chosen names).
    static func bounds(of pattern: String) -> Setting.Bounds? {
        byKey[pattern]
    }

    private static let byKey: [String: Setting.Bounds] = all.reduce(into: [:]) { table, setting in
        if let bounds = setting.bounds, table[setting.key] == nil { table[setting.key] = bounds }
    }

    /// The keys a mapping at `pattern` may hold (those of resources of `kind` only, under `resources.*`).
    static func keys(under pattern: String, kind: ResourceKind?) -> Set<String> {
        let prefix = pattern.isEmpty ? "" : pattern + "."
        var keys: Set<String> = []
        for setting in all where setting.key.hasPrefix(prefix) && setting.key.count > prefix.count {
            if let kind, let kinds = setting.kinds, !kinds.contains(kind) { continue }
            keys.insert(String(setting.key.dropFirst(prefix.count).prefix { $0 != "." && $0 != "[" }))
        }
        return keys
    }
}

/// One restart-only setting: whether two configurations differ in it, and how a reload keeps
/// the running value.
public struct RestartRule: Sendable {
    public let key: String
    public let differs: @Sendable (Configuration, Configuration) -> Bool
    let keep: @Sendable (inout Configuration, Configuration) -> Void

    init(key: String, differs: @escaping @Sendable (Configuration, Configuration) -> Bool,
         keep: @escaping @Sendable (inout Configuration, Configuration) -> Void) {
        self.key = key
        self.differs = differs
        self.keep = keep
    }

    init<Value: Equatable & Sendable>(_ key: String, _ path: any WritableKeyPath<Configuration, Value> & Sendable) {
        self.init(key: key, differs: { $0[keyPath: path] != $1[keyPath: path] }, keep: { $0[keyPath: path] = $1[keyPath: path] })
    }
}

// MARK: - server

extension Configuration.Server: SettingsSection {
    static var defaults: Self { Self() }

    static let fields: [Field<Self>] = [
        Field("listen", \.listen, .listenAddress, environment: "TRIBUTARY_LISTEN", option: "--listen HOST:PORT", reload: .restart,
              "where to listen (`[::1]:8080` for IPv6)"),
        Field("workers", \.workers, .workers(1...256), default: "`1` (shipped: `auto`)", environment: "TRIBUTARY_WORKERS",
              option: "--workers N", reload: .restart, "event loops, one thread each, sharing the port (SO_REUSEPORT); `auto`: one per core"),
        Field("logLevel", \.logLevel, .oneOf(Configuration.logLevels), environment: "TRIBUTARY_LOG_LEVEL", option: "--log-level LEVEL",
              reload: .restart, "`trace`, `debug`, `info`, `notice`, `warning`, `error` or `critical`; `info` writes one access line per request"),
        Field("logFormat", \.logFormat, .choice(LogFormat.self, described: "text or json"), environment: "TRIBUTARY_LOG_FORMAT",
              option: "--log-format FORMAT", reload: .restart,
              "`text` (swift-log's lines) or `json`: each line one JSON object with `time`, `level`, `message`, `logger`, its metadata, and a request's `trace_id` and `span_id` (see [operations.md](operations.md), \"Log format\")"),
        Field("requestTimeout", \.requestTimeout, .duration(.milliseconds(10) ... .seconds(3600)), reload: .restart,
              "how long a client may take to send a whole request, counted from its connection's accept or the end of its previous answer (an idle keep-alive connection is closed then too), and how long a write may stay blocked"),
        Field("maxHeaderBytes", \.maxHeaderBytes, .whole(1024...1 << 20), reload: .restart, "larger request headers get 431"),
        Field("maxBodyBytes", \.maxBodyBytes, .whole(0...1 << 26), reload: .restart, "larger request bodies get 413"),
        Field("maxConnections", \.maxConnections, .whole(1...1_000_000), reload: .restart,
              "client connections per worker, counted from their accept, event streams included; beyond, the connection's first request gets 503 and it is closed (kept above `sse.maxSubscribers`, so a worker full of streams still answers)"),
        Field("shutdownTimeout", \.shutdownTimeout, .duration(.zero ... .seconds(3600)), reload: .restart,
              "how long SIGTERM waits for requests in flight"),
        Field("adminToken", \.adminToken, .optionalText, default: "none: reloads for loopback clients only",
              environment: "TRIBUTARY_ADMIN_TOKEN",
              "when set, `POST /{resource}/reload` needs `Authorization: Bearer <token>` from any client; unset, it answers only clients on the service's own host (`127.0.0.0/8`, `::1`), others get 403 `forbidden` (see [operations.md](operations.md), \"Reload endpoints\")"),
        Field("staleIfErrorBytes", \.staleIfErrorBytes, .whole(0...1 << 32), default: "`67108864` (64 MiB)",
              "what the whole process keeps of last good documents for `staleIfError`, each counting its JSON, its URL and ~384 bytes of bookkeeping; beyond, those fetched longest ago are evicted; `0` keeps none (a reload to a smaller one evicts at once)"),
        Field("corsOrigins", \.corsOrigins, .list { text, _ in text }, environment: "TRIBUTARY_CORS_ORIGINS",
              "origins whose pages may call the service (`*`: any); preflights answered"),
        Field("maxIdentities", \.maxIdentities, .whole(1...1_000_000), reload: .restart,
              "identities with live pipelines in the process at once (each client of a per-identity resource has its own); a new identity's stream beyond it gets 503 `too_many_identities`"),
        Field("trustedProxies", \.trustedProxies, .list { text, location throws(ConfigurationError) in try Configuration.addressRange(text, at: location) }, environment: "TRIBUTARY_TRUSTED_PROXIES",
              "CIDRs (`10.0.0.0/8`, `::1`) of proxies whose `X-Forwarded-For` names the client: the right-most address in it that is not itself a trusted proxy. An entry that is not an IP address (a port after one is dropped) stops the walk, and the last trusted hop is the client (the proxy that wrote it, or the peer). Any other peer is the client, whatever it sends: behind a proxy, list it, or every client is the proxy and shares one client's streams and limits. Every address is counted in one form: IPv4-mapped IPv6 as IPv4, IPv6 per /64 (see [operations.md](operations.md), \"Who a client is\")"),
        Field("maxStreamsPerClient", \.maxStreamsPerClient, .whole(1...1_000_000),
              "live streams one client (its token's subject, else its address, IPv6 per /64) may hold in the process (each resource of a `/events` stream counts), rate limit or not; beyond, 429 `too_many_streams`"),
        Field("maxClientSharePercent", \.maxClientSharePercent, .whole(1...100),
              "the share of each resource's `maxLivePipelines`, and of `server.maxIdentities`, that one client (counted as for `maxStreamsPerClient`) may start, at least one of each: with the defaults 100 pipelines of a resource and 1,000 identities (`maxStreamsPerClient` binds first). A stream that would start one more gets 429 `too_many_client_pipelines` or `too_many_client_identities`; joining a pipeline that runs is not starting one. A reload applies it to pipelines started from then on"),
        Field("maxRateLimitBuckets", \.maxRateLimitBuckets, .whole(1000...10_000_000), reload: .restart,
              "rate-limit buckets the process keeps (one per client and policy, 170 to 330 bytes each: 17 to 33 MiB at the default); a new client's takes the place of the least recently seen one's, which only gives that client a whole burst again"),
    ]
}

extension Settings {
    /// `rateLimit` and its keys, under `server` and under each resource.
    static func rateLimit(under key: String, default defaultText: String, _ meaning: String) -> [Setting] {
        [Setting(key, default: defaultText, meaning)] + Configuration.RateLimit.fields.map { $0.setting.under(key) }
    }
}

extension Configuration.RateLimit: SettingsSection {
    /// No rate yet (`rate` is required), and a burst of zero: not given, one second of the rate.
    static var defaults: Self { Self(perSecond: 0, burst: 0) }

    static let fields: [Field<Self>] = [
        Field("rate", \.perSecond, .rate(1.0 / 3600 ... 1_000_000), default: "required",
              "requests per second, minute or hour: `N/s`, `N/m` or `N/h`"),
        Field("burst", \.burst, .whole(1...1_000_000), default: "one second of `rate`", "requests at once"),
        Field("by", \.by, .choice(Configuration.ClientKeyKind.self, described: "identity or ip"),
              "`identity` (the token's subject; a request without a token counts by its address) or `ip`"),
    ]
}

// MARK: - sse

extension Configuration.EventStreams: SettingsSection {
    static var defaults: Self { Self() }

    static let fields: [Field<Self>] = [
        Field("heartbeat", \.heartbeat, .duration(.milliseconds(10) ... .seconds(3600)), "comment line interval on event streams"),
        Field("retry", \.retry, .duration(.zero ... .seconds(86_400)), "reconnection delay sent in `retry:`"),
        Field("sendBuffer", \.sendBuffer, .whole(4096...1 << 26), "socket send buffer of each event stream, in bytes"),
        Field("maxSubscribers", \.maxSubscribers, .whole(1...1_000_000), "live streams per worker; beyond, 503"),
        Field("progressiveWindow", \.progressiveWindow, .duration(.zero ... .seconds(10)),
              "a `progressive=true` stream's first document: details that arrive within this window of each other go out as one event"),
    ]
}

// MARK: - cluster

extension Configuration.Cluster: SettingsSection {
    /// No Redis: the placeholder a file's `cluster:` without `redis` waits with for the
    /// environment's or the command line's (an endpoint never has an empty host).
    static var defaults: Self { Self(redis: RedisEndpoint(host: "")) }

    static let fields: [Field<Self>] = [
        Field("redis", \.redis, .redis, default: "none: the replica runs alone", environment: "TRIBUTARY_REDIS_URL", option: "--redis URL",
              "`redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`: join the fleet of replicas that share this Redis (see [fleet.md](fleet.md))"),
        Field("leaseTTL", \.leaseTTL, .duration(.milliseconds(300) ... .seconds(3600)),
              "how long a replica's lease on a shared live resource lasts unless renewed (every third of it): a dead holder's resources move to another replica within it"),
        Field("keyPrefix", \.keyPrefix, .keyPrefix,
              "the prefix of every Redis key and channel the fleet uses, so several fleets can share one Redis"),
        Field("secret", \.secret, .clusterSecret, default: "none: required with `cluster.redis`", environment: "TRIBUTARY_CLUSTER_SECRET",
              "the fleet's shared secret, at least 16 bytes (e.g. `openssl rand -hex 32`), the same on every replica: everything a replica writes to Redis is signed with it (HMAC-SHA256) and whatever fails the signature is dropped (see [fleet.md](fleet.md), \"Trust\"); replicas with another secret are another fleet. Never logged or shown; keep it out of the file (the environment is better)"),
    ]
}

extension SettingType {
    /// `cluster.keyPrefix`: text without spaces.
    static var keyPrefix: SettingType<String> {
        SettingType<String> { prefix, location throws(ConfigurationError) in
            guard !prefix.isEmpty, !prefix.contains(where: { $0.isWhitespace }) else {
                throw ConfigurationError(location, "expected a non-empty prefix without spaces, found \"\(prefix)\"")
            }
            return prefix
        }
    }
}

// MARK: - auth

extension Configuration.Auth: SettingsSection {
    static var defaults: Self { Self() }

    static let fields: [Field<Self>] = [
        Field("required", \.required, .boolean, "the default of every resource's `auth.required` (needs `auth.jwt`)"),
    ]
}

extension Configuration.JWTSettings: SettingsSection {
    static var defaults: Self { Self() }

    static let fields: [Field<Self>] = [
        Field("issuer", \.issuer, .optionalText, default: "any",
              "the `iss` a token must carry (unset, a warning at start says that any issuer's tokens are taken)"),
        Field("audience", \.audience, .optionalText, default: "any",
              "a value the token's `aud` must hold (unset, a warning at start says that tokens meant for any service are taken)"),
        Field("leeway", \.leeway, .duration(.zero ... .seconds(3600)),
              "how far `exp` and `nbf` may be off; a token is accepted until `exp` plus it"),
        Field("jwks", \.jwks, SettingType<BaseURL>.baseURL.optional,
              "a JSON Web Key Set URL (`http://` or `https://`), fetched with Tributary's own client at start, every `jwksRefresh`, and when a token names a `kid` it lacks (at most once every 10 s); its RS256, ES256 and EdDSA keys with a `kid` are used. A failed fetch, or one of the same set, keeps the keys known and the tokens verified with them. `http://` to a host other than loopback gets a warning at start (the keys could be replaced on the way)"),
        Field("jwksRefresh", \.jwksRefresh, .duration(.seconds(10) ... .seconds(86_400)), "how often the JWKS is fetched again"),
    ]
}

extension Settings {
    /// `auth.jwt.keys`, a list of mappings (Configuration+AccessLoading.swift reads it).
    static let jwtKeys: [Setting] = [
        Setting("auth.jwt.keys", default: "`[]`",
                "the keys tokens are verified with, given in the file; a token's `kid` picks the key (a token without one: the keys without one)"),
        Setting("auth.jwt.keys[].alg", default: "required", "`HS256`, `RS256`, `ES256` or `EdDSA`"),
        Setting("auth.jwt.keys[].kid", default: "none", "the key id a token's header names"),
        Setting("auth.jwt.keys[].secret", default: "none",
                "an `HS256` key: its UTF-8 bytes, at least 32, `${VAR}` expanded from the environment"),
        Setting("auth.jwt.keys[].publicKey", default: "none", "an `RS256`, `ES256` or `EdDSA` key: a PEM, `${VAR}` expanded"),
    ]
}

// MARK: - upstreams

extension Configuration.UpstreamSettings: SettingsSection {
    static var defaults: Self { Self(url: try! BaseURL("http://127.0.0.1")) }

    static let fields: [Field<Self>] = [
        Field("timeout", \.policy.timeout, .duration(.milliseconds(1) ... .seconds(3600)),
              "deadline of one call, waiting for a pooled connection included"),
        Field("retries", \.policy.retries, .whole(0...100),
              "extra attempts after a connection failure or a 502/503/504 (never after a timeout, a TLS failure, an oversized or malformed answer). Not counted: a GET that loses a reused keep-alive connection before any byte of its answer (the upstream closed it while idle) goes again once on a new connection by itself, as RFC 9112 §9.3.1 allows"),
        Field("backoff", \.policy.backoff, .duration(.zero ... .seconds(60)), "wait before the first retry, doubled for each next one"),
        Field("poolSize", \.poolSize, .whole(1...4096),
              "keep-alive connections to the upstream's origin from the whole process (connecting, busy and idle), a budget the workers lend each other: a worker busy alone may use all of it (another worker's idle connections are closed for it), and workers busy at once share it in proportion to their calls (counted up to `poolSize`), each keeping up to a quarter of it beyond its share before it gives connections back; upstreams on one origin share one budget, of the largest of their sizes"),
        Field("maxQueue", \.maxQueue, .whole(0...1_000_000),
              "calls that may wait for one of a worker's connections to the upstream's origin; beyond, a call fails at once and the answer is 503 `upstream_saturated` with `Retry-After`"),
        Field("maxResponseBytes", \.policy.maxResponseBytes, .whole(1024...1 << 30),
              "larger upstream bodies fail the call (502, not retried); a body whose JSON needs more memory to parse than 32 bytes per byte (at most 64 MiB, whatever this key says) is refused as malformed (502 `upstream_malformed`, see [operations.md](operations.md), \"Limits and protection\")"),
        Field("revalidate", \.policy.revalidate, .boolean,
              "a live pipeline's refresh (and a live view's reload) asks again with the validators of each earlier answer, `If-None-Match` with its `ETag` or else `If-Modified-Since` with its `Last-Modified`: list, details, batches, pages. A `304` reuses the earlier answer's parsed document, without reading or parsing a body; where nothing changed, no event goes out. An expired `details.cacheFor` entry with validators is revalidated alike. A `304` to a call that sent no validator fails it. One-shot JSON GETs without a detail cache never revalidate. Counted by `tributary_upstream_not_modified_total{upstream}` (see [api.md](api.md), \"Revalidation\")"),
        Field("revalidateBytes", \.policy.revalidateBytes, .whole(0...1 << 34), default: "`33554432` (32 MiB)",
              "what each worker keeps of the upstream's earlier answers for revalidation, per identity and call, each counting its body, its validators, its call and ~384 bytes of bookkeeping; beyond, those used longest ago are evicted (their next call is a plain one)"),
        Field("circuitBreaker.failures", \.circuitBreaker.failures, .whole(0...1_000_000),
              "consecutive failed calls (no connection, timeout, 5xx) that open the upstream's circuit, for the whole process; `0` turns the breaker off (see [api.md](api.md), \"Failing upstreams\")"),
        Field("circuitBreaker.openFor", \.circuitBreaker.openFor, .duration(.milliseconds(1) ... .seconds(86_400)),
              "how long an open circuit fails calls at once (503 `upstream_circuit_open`, `Retry-After`) before one probe call decides"),
        Field("circuitBreaker.enabled", .boolean, default: "`true`", "`false` turns the breaker off whatever `failures` says") { upstream, enabled in
            if !enabled { upstream.circuitBreaker.failures = 0 }
        },
    ]
}

extension Settings {
    /// `upstreams.<name>.url`, required, and overridden per upstream by name
    /// (Configuration+Loading.swift).
    static let upstreamURL = {
        var url = Setting("upstreams.*.url", default: "required",
                          "the upstream's base URL, `http://` or `https://` (certificates verified against the system CAs, SNI sent)")
        (url.environment, url.option) = ("TRIBUTARY_UPSTREAM_<NAME>", "--upstream NAME=URL")
        return url
    }()

    /// The upstream keys read by hand (Configuration+Upstreams.swift).
    static let upstreamStructure: [Setting] = [
        Setting("upstreams.*.headers", default: "none",
                "headers sent on every call to the upstream, e.g. `{Authorization: \"Bearer ${TASKS_TOKEN}\", X-Api-Key: \"${KEY}\"}`. `${VAR}` expands from the environment at start and on reload (unset: the start fails, a reload changes nothing; either names the key and the variable). Values are secrets: never in a log line, `/metrics`, `/openapi.json` or an error. `Host`, `Connection`, `Content-Length`, `Transfer-Encoding`, `traceparent`, `tracestate` and other hop-by-hop names are refused"),
        Setting("upstreams.*.forward", default: "`[]`",
                "headers of the client's request (e.g. `[Authorization, Cookie]`) sent on every call to the upstream that the request causes: list, details, pages, search, retries, and the refreshes of its live stream. A resource of such an upstream is **per identity** (see [api.md](api.md), \"Per-identity resources\")"),
    ]
}

// MARK: - resources

extension Configuration.JSONAnswerSettings: SettingsSection {
    static var defaults: Self { Self() }

    static let fields: [Field<Self>] = [
        Field("coalesce", \.coalesce, .boolean,
              "identical JSON GETs in flight at once on a worker share one fetch (see [api.md](api.md), \"Coalescing and stale answers\"); `false`: every request its own"),
        Field("staleIfError", \.staleIfError, SettingType<Duration>.duration(.milliseconds(1) ... .seconds(7 * 86_400)).optional, default: "off",
              "a duration (more than `0s`): when a JSON answer's fetch fails, answer the last good document of the same URL if it was fetched no longer ago, with `Age` and `Tributary-Stale: <error code>` (kept within `server.staleIfErrorBytes`)"),
    ]
}

extension Settings {
    /// The keys of every resource read by hand (Configuration+Resources.swift).
    static let resourceStructure: [Setting] = [
        Setting("resources.*", default: "",
                "a resource served at `/<name>`; the name is letters, digits, `-` and `_` (not `streams`, `healthz`, `readyz`, `metrics`, `events`)"),
        Setting("resources.*.kind", default: "required", "`list`, `pages` or `search` (below)"),
        Setting("resources.*.upstream", default: "required", "an entry of `upstreams`"),
        Setting("resources.*.route", default: "`/<name>`",
                "the path it is served at; segments in braces are path parameters: `/teams/{team}/groups`. Its first segment is fixed text, not one of `streams`, `events`, `healthz`, `readyz`, `metrics`, `openapi.json`. `POST /<name>/reload` stays at the name"),
        Setting("resources.*.fields", default: "every member",
                "the members of each element it serves at all, e.g. `[id, name, taskCount]` (a dotted name keeps one member inside its parent: `owner.login`); a client's `fields=` only narrows it. A failed item's `error` is always kept. At most 64 names of at most 128 bytes"),
        Setting("resources.*.parameters.*", default: "none",
                "a parameter the client gives. A value is at most 1024 bytes, and never `.` or `..` (it would move an upstream path), whatever the pattern; values are compared by their bytes (no Unicode normalization). Refused: 400 `missing_parameter` or `invalid_parameter`, naming it, before any upstream call. Undeclared query parameters are ignored. Not named `id` (an item's), nor `fields`, `access_token`, `updates` or `progressive`, which every resource reads itself"),
        Setting("resources.*.parameters.*.in", default: "`path`",
                "`path` (a `{p}` segment of `route`, always required, no default) or `query`"),
        Setting("resources.*.parameters.*.pattern", default: "none",
                "a regular expression the value must contain a match of (anchor it: `^[a-z0-9-]{1,40}$`)"),
        Setting("resources.*.parameters.*.enum", default: "none", "the only values"),
        Setting("resources.*.parameters.*.default", default: "none", "the value when absent (an empty query value counts as absent)"),
        Setting("resources.*.parameters.*.required", default: "`true` for `in: path`, else `false`", "whether a value must be given"),
    ]

    /// `resources.<name>.auth` and `.rateLimit` (Configuration+AccessLoading.swift).
    static let resourceAccess: [Setting] = [
        Setting("resources.*.auth.required", default: "`auth.required`",
                "a bearer token is needed: 401 without one (or with one that does not verify), and the resource is per identity (its documents keyed by the token's `sub`, answered `Cache-Control: private, no-cache`, `Vary: Authorization`)"),
        Setting("resources.*.auth.scopes", default: "`[]`",
                "scopes the token must grant (its `scope` claim, space-separated, or `scp`, an array or a string); naming any requires a token; a token without one is 403 `insufficient_scope`"),
    ] + rateLimit(under: "resources.*.rateLimit", default: "`server.rateLimit`",
                  "the resource's own limit (same keys), named after the resource in the `RateLimit` fields")

    /// The keys of a `kind: list` resource read by hand.
    static let listStructure: [Setting] = [
        Setting("resources.*.list.path", kinds: [.list], default: "required",
                "the list call, e.g. `/groups` or `/teams/{team}/groups?status={status}`: each `{p}` of a parameter is replaced by its value, percent-encoded (everything but RFC 3986's unreserved characters), so a value is one segment or one query value whatever it holds"),
        Setting("resources.*.details.path", kinds: [.list], default: "required (optional, and unused, with `details.batch`)",
                "the per-item call, holding `{id}` once (and any parameter); the id is percent-encoded as one path segment"),
        Setting("resources.*.details.batch.path", kinds: [.list], default: "required in `details.batch`",
                "the batch form of the detail call, without its ids, e.g. `/groups/metadata` (the resource's parameters may be placeholders, not `{id}`; a query of its own is kept): a list of N items then costs ⌈N/`max`⌉ calls instead of N (see [api.md](api.md), \"Batched details\")"),
    ]

    /// The keys of a `kind: pages` resource read by hand.
    static let pagesStructure: [Setting] = [
        Setting("resources.*.list.path", kinds: [.pages], default: "required", "the list call, e.g. `/topics` (its parameters as for `kind: list`)"),
        Setting("resources.*.pages.path", kinds: [.pages], default: "required",
                "an item's page call, holding `{id}` once (and any parameter), e.g. `/topics/{id}/medias`"),
    ]

    /// The keys of a `kind: search` resource read by hand.
    static let searchStructure: [Setting] = [
        Setting("resources.*.path", kinds: [.search], default: "required",
                "the search call, e.g. `/search/repositories` (any parameter's `{p}` as for `kind: list`)"),
    ]
}

extension Configuration.ListSettings: SettingsSection {
    static let fields: [Field<Self>] = [
        Field("list.items", \.definition.itemsAt, .jsonPath, "where the array of items is, as a dot path (`result`, `data.items`)"),
        Field("list.id", \.definition.idMember, .text, "the member of each item that is its id"),
        Field("details.value", \.definition.detailAt, .jsonPath, "where the item's details (an object merged into the item) are"),
        Field("details.batchWindow", \.definition.batchWindow, .duration(.zero ... .seconds(10)),
              "with `details.batch`: how long the ids of concurrent requests and live streams of one worker wait to share batch calls (per parameter values of the batch path and per identity); an id asked twice in the window, or while its call is in flight, is fetched once. `0`: each answer's ids go out at once in calls of their own"),
        Field("details.cacheFor", \.definition.detailFreshness, .detailFreshness(.zero ... .seconds(86_400)), default: "`0s` (off)",
              "how long fetched details are reused across requests, streams and workers, per identity (the list is always fetched); a reload that changes the resource starts an empty cache. `upstream`: as each detail answer's `Cache-Control` says, as a private cache reads it (RFC 9111): fresh for its `max-age` less its `Age`, revalidated on every use under `no-cache` or without `max-age`, never kept under `no-store`. An expired detail whose answer had an `ETag` or `Last-Modified` is revalidated (with `upstreams.NAME.revalidate`), and a `304` makes it fresh again"),
        Field("details.cacheBytes", \.definition.cacheBytes, .whole(0...1 << 32), default: "`33554432` (32 MiB)",
              "what the process keeps of the resource's cached details, each counting its JSON, its call and ~384 bytes of bookkeeping; beyond, the least recently used are evicted"),
        Field("concurrency", \.definition.concurrency, .whole(1...1024), default: "`16` (shipped: `64`)",
              "detail calls in flight at once per answer (the pool bounds them too); with `details.batch`, batch calls, per answer or, with a window, per window"),
        Field("refreshInterval", \.refreshInterval, .duration(.milliseconds(10) ... .seconds(86_400)),
              "live streams refresh this long after the previous refresh ended"),
        Field("onItemFailure", \.definition.onItemFailure, .choice(ListResource.ItemFailurePolicy.self),
              "`mark` (keep the item with an `error` member), `drop`, or `fail`"),
        Field("pendingMember", \.definition.pendingMember, .nonEmptyText("expected a member name"),
              "in a `progressive=true` stream's first document, the member (`true`) that marks an item still waiting for its details; kept whatever `fields` asks"),
        Field("maxLivePipelines", \.maxLivePipelines, .whole(1...1_000_000),
              "shared live pipelines of the resource at once in the process, one per combination of parameter values and identity; a stream that needs one more gets 503 `too_many_pipelines`. A pipeline is released when its last stream leaves"),
    ]
}

extension DetailBatch: SettingsSection {
    static var defaults: Self { Self(path: "/", parameter: "ids", style: .comma, max: 50, itemsAt: JSONPath(""), idMember: "id") }

    static let fields: [Field<Self>] = [
        Field("parameter", \.parameter, .nonEmptyText("expected the name of a query parameter"),
              "the query parameter that carries the ids; each id is percent-encoded as a query value (a comma in an id is `%2C`)"),
        Field("style", \.style, .choice(DetailBatch.Style.self),
              "`comma`: `?ids=a,b,c` (raw commas between the ids); `repeat`: `?ids=a&ids=b&ids=c`"),
        Field("max", \.max, .whole(1...1000), "the most ids one call asks for"),
        Field("items", \.itemsAt, .jsonPath,
              "where the array of items is in a batch answer; each item is matched back to the list's by its id, in any order, and merged as a detail answer's object is (the list's members win); an item the answer leaves out fails (`upstream_item_missing`, under `onItemFailure`), a failed call fails its items"),
        Field("id", \.idMember, .nonEmptyText("expected the name of the member that holds an item's id"),
              "the member of each answered item that is its id"),
    ]
}

extension Configuration.PagesSettings: SettingsSection {
    static let fields: [Field<Self>] = [
        Field("list.items", \.definition.itemsAt, .jsonPath, "where the array of items is, as a dot path"),
        Field("list.id", \.definition.idMember, .text, "the member of each item that is its id"),
        Field("pages.items", \.definition.pageItemsAt, .jsonPath, "where a page's items are"),
        Field("pages.cursor", \.definition.cursorAt, .jsonPath, "where a page names the next one (`null` or missing: the last page)"),
        Field("pages.parameter", \.definition.cursorParameter, .text, "the query parameter carrying the cursor (absent for the first page)"),
        Field("row.item", \.definition.rowItemKey, .text, default: "`item` (shipped: `topic`)", "the member of each row that holds the item"),
        Field("row.pages", \.definition.rowPagesKey, .text, default: "`items` (shipped: `medias`)", "the member of each row that holds its items loaded so far"),
        Field("concurrency", \.definition.concurrency, .whole(1...1024), "first pages in flight at once for a JSON answer"),
        Field("loadMoreArgument", \.loadMoreArgument, .text, "the query parameter of the `loadMore` trigger naming the item"),
    ]
}

extension Configuration.SearchSettings: SettingsSection {
    static let fields: [Field<Self>] = [
        Field("parameter", \.definition.parameter, .text, "the query parameter carrying the query (also the stream's input name)"),
        Field("items", \.definition.itemsAt, .jsonPath, "where the results array is, passed on unchanged"),
        Field("minimumLength", \.definition.minimumLength, .whole(0...1024), "shorter queries answer `[]` without an upstream call"),
        Field("debounce", \.definition.debounce, .duration(.zero ... .seconds(3600)),
              "how long a stream's `q` must stay unchanged before it is searched"),
    ]
}
