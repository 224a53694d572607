import Aggregation
import Glibc
import HTTPCore
import UpstreamClient
import Redis

extension Configuration {
    /// What the command line says, on top of the file and the environment.
    public struct Overrides: Sendable {
        public var listen: String?
        public var workers: Int?
        public var logLevel: String?
        /// `NAME=URL` pairs from `--upstream`.
        public var upstreams: [String] = []
        /// `--redis URL`: `cluster.redis`.
        public var redis: String?

        public init(listen: String? = nil, workers: Int? = nil, logLevel: String? = nil, upstreams: [String] = [], redis: String? = nil) {
            self.listen = listen
            self.workers = workers
            self.logLevel = logLevel
            self.upstreams = upstreams
            self.redis = redis
        }
    }

    /// The configuration from `yaml` (the text of `file`), then `environment` (`TRIBUTARY_*`),
    /// then `overrides`; validated as a whole.
    public static func load(
        yaml: String, file: String, environment: [String: String] = [:], overrides: Overrides = .init()
    ) throws(ConfigurationError) -> Configuration {
        var configuration = try Configuration(yaml: YAMLSection.root(yaml: yaml, file: file), environment: environment)
        try configuration.apply(environment: environment)
        try configuration.apply(overrides)
        if let secret = configuration.clusterSecretFromEnvironment { configuration.cluster?.secret = secret }
        try configuration.validate(file: file)
        return configuration
    }

    /// What a resource's name is made of: ASCII letters, digits, `-` and `_`.
    static let resourceNameBytes = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8))

    static let logLevels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    private init(yaml root: YAMLSection, environment: [String: String]) throws(ConfigurationError) {
        try root.allowOnly(["server", "sse", "cluster", "upstreams", "resources", "auth"])
        if let section = try root.section("server") {
            try section.allowOnly([
                "listen", "workers", "logLevel", "requestTimeout", "maxHeaderBytes", "maxBodyBytes", "maxConnections",
                "shutdownTimeout", "adminToken", "corsOrigins", "staleIfErrorBytes", "maxIdentities",
                "rateLimit", "trustedProxies", "maxStreamsPerClient",
            ])
            if let text = try section.string("listen") {
                guard let address = ListenAddress(text) else {
                    throw ConfigurationError(section.location("listen"), "expected HOST:PORT, found \"\(text)\"")
                }
                server.listen = address
            }
            if let workers = try section.string("workers") {
                server.workers = try Self.workers(workers, at: section.location("workers"))
            }
            server.logLevel = try section.string("logLevel") ?? server.logLevel
            server.requestTimeout = try section.duration("requestTimeout") ?? server.requestTimeout
            server.maxHeaderBytes = try section.integer("maxHeaderBytes", atLeast: 1024) ?? server.maxHeaderBytes
            server.maxBodyBytes = try section.integer("maxBodyBytes", atLeast: 0) ?? server.maxBodyBytes
            server.maxConnections = try section.integer("maxConnections", atLeast: 1) ?? server.maxConnections
            server.shutdownTimeout = try section.duration("shutdownTimeout") ?? server.shutdownTimeout
            server.adminToken = try section.string("adminToken").flatMap { $0.isEmpty ? nil : $0 }
            server.corsOrigins = try section.strings("corsOrigins") ?? server.corsOrigins
            server.staleIfErrorBytes = try section.integer("staleIfErrorBytes", atLeast: 0) ?? server.staleIfErrorBytes
            server.maxIdentities = try section.integer("maxIdentities", atLeast: 1) ?? server.maxIdentities
            server.rateLimit = try section.section("rateLimit").map { section throws(ConfigurationError) in try Self.rateLimit(section) }
            server.trustedProxies = try Self.trustedProxies(section) ?? server.trustedProxies
            server.maxStreamsPerClient = try section.integer("maxStreamsPerClient", atLeast: 1)
        }
        if let section = try root.section("auth") {
            auth = try Self.auth(section, environment: environment)
        }
        if let section = try root.section("sse") {
            try section.allowOnly(["heartbeat", "retry", "sendBuffer", "maxSubscribers"])
            sse.heartbeat = try section.duration("heartbeat") ?? sse.heartbeat
            sse.retry = try section.duration("retry") ?? sse.retry
            sse.sendBuffer = try section.integer("sendBuffer", atLeast: 4096) ?? sse.sendBuffer
            sse.maxSubscribers = try section.integer("maxSubscribers", atLeast: 1) ?? sse.maxSubscribers
        }
        if let section = try root.section("cluster") {
            try section.allowOnly(["redis", "leaseTTL", "keyPrefix", "secret"])
            // The Redis may come from the environment or the command line instead.
            var cluster = Configuration.Cluster(redis: RedisEndpoint(host: "unset"))
            if let ttl = try section.duration("leaseTTL") {
                guard ttl >= .milliseconds(300) else {
                    throw ConfigurationError(section.location("leaseTTL"), "expected at least 300ms, found \(ttl)")
                }
                cluster.leaseTTL = ttl
            }
            if let prefix = try section.string("keyPrefix") {
                guard !prefix.isEmpty, !prefix.contains(where: { $0.isWhitespace }) else {
                    throw ConfigurationError(section.location("keyPrefix"), "expected a non-empty prefix without spaces, found \"\(prefix)\"")
                }
                cluster.keyPrefix = prefix
            }
            if let secret = try section.string("secret"), !secret.isEmpty {
                cluster.secret = try ClusterSecret(secret, at: section.location("secret"))
            }
            if let redis = try section.string("redis") {
                cluster.redis = try Self.redisEndpoint(redis, at: section.location("redis"))
                self.cluster = cluster
            } else {
                clusterWithoutRedis = cluster
            }
        }
        for (name, section) in try root.section("upstreams")?.namedSections() ?? [] {
            try section.allowOnly([
                "url", "timeout", "retries", "backoff", "poolSize", "maxQueue", "maxResponseBytes", "circuitBreaker", "headers", "forward",
            ])
            var upstream = UpstreamSettings(url: try Self.baseURL(try section.requiredString("url"), at: section.location("url")))
            upstream.policy.timeout = try section.duration("timeout") ?? upstream.policy.timeout
            upstream.policy.retries = try section.integer("retries", atLeast: 0) ?? upstream.policy.retries
            upstream.policy.backoff = try section.duration("backoff") ?? upstream.policy.backoff
            upstream.poolSize = try section.integer("poolSize", atLeast: 1) ?? upstream.poolSize
            upstream.maxQueue = try section.integer("maxQueue", atLeast: 0) ?? upstream.maxQueue
            upstream.policy.maxResponseBytes = try section.integer("maxResponseBytes", atLeast: 1024) ?? upstream.policy.maxResponseBytes
            if let breaker = try section.section("circuitBreaker") {
                upstream.circuitBreaker = try Self.circuitBreaker(breaker)
            }
            if let headers = try section.section("headers") {
                upstream.headers = try Self.upstreamHeaders(headers, environment: environment)
            }
            if let forward = try section.strings("forward") {
                upstream.forward = try Self.forwardedHeaders(forward, at: section.location("forward"))
            }
            upstreams[name] = upstream
        }
        for (name, section) in try root.section("resources")?.namedSections() ?? [] {
            resources[name] = try Self.resource(section, named: name)
            resourceAccess[name] = try Self.resourceAccess(section)
        }
    }

    private static func resource(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> Resource {
        let kind = try section.requiredString("kind")
        let answers = try answerSettings(section)
        let routing = try Self.routing(section, named: name)
        let declared = Set(routing.parameters.map(\.name))
        switch kind {
        case "list":
            try section.allowOnly(answerKeys.union(routingKeys).union(accessKeys).union([
                "kind", "upstream", "list", "details", "concurrency", "refreshInterval", "onItemFailure", "maxLivePipelines",
            ]))
            let list = try section.requiredSection("list")
            try list.allowOnly(["path", "items", "id"])
            let details = try Self.listDetails(try section.requiredSection("details"), parameters: declared)
            let listPath = try upstreamPath(list, "path", itemID: false, parameters: declared)
            let policyName = try section.string("onItemFailure") ?? ListResource.ItemFailurePolicy.mark.rawValue
            guard let policy = ListResource.ItemFailurePolicy(rawValue: policyName) else {
                let known = ListResource.ItemFailurePolicy.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigurationError(section.location("onItemFailure"), "expected one of \(known), found \"\(policyName)\"")
            }
            var settings = ListSettings(
                upstream: try section.requiredString("upstream"), routing: routing,
                definition: ListResource.Definition(
                    listPath: listPath, itemsAt: JSONPath(try list.string("items") ?? ""),
                    idMember: try list.string("id") ?? "id", detailPath: details.path, detailAt: details.value,
                    concurrency: try section.integer("concurrency", atLeast: 1) ?? 16, onItemFailure: policy, batch: details.batch,
                    batchWindow: details.batchWindow, cacheFor: details.cacheFor, cacheBytes: details.cacheBytes))
            settings.refreshInterval = try section.duration("refreshInterval") ?? settings.refreshInterval
            settings.maxLivePipelines = try section.integer("maxLivePipelines", atLeast: 1) ?? settings.maxLivePipelines
            settings.answers = answers
            return .list(settings)
        case "pages":
            try section.allowOnly(answerKeys.union(routingKeys).union(accessKeys).union([
                "kind", "upstream", "list", "pages", "row", "concurrency", "loadMoreArgument",
            ]))
            let list = try section.requiredSection("list")
            try list.allowOnly(["path", "items", "id"])
            let pages = try section.requiredSection("pages")
            try pages.allowOnly(["path", "items", "cursor", "parameter"])
            let row = try section.section("row")
            try row?.allowOnly(["item", "pages"])
            var settings = PagesSettings(
                upstream: try section.requiredString("upstream"), routing: routing,
                definition: PagedListResource.Definition(
                    listPath: try upstreamPath(list, "path", itemID: false, parameters: declared),
                    itemsAt: JSONPath(try list.string("items") ?? ""), idMember: try list.string("id") ?? "id",
                    pagePath: try upstreamPath(pages, "path", itemID: true, parameters: declared),
                    pageItemsAt: JSONPath(try pages.string("items") ?? ""), cursorAt: JSONPath(try pages.string("cursor") ?? "next"),
                    cursorParameter: try pages.string("parameter") ?? "page", rowItemKey: try row?.string("item") ?? "item",
                    rowPagesKey: try row?.string("pages") ?? "items", concurrency: try section.integer("concurrency", atLeast: 1) ?? 8))
            settings.loadMoreArgument = try section.string("loadMoreArgument") ?? settings.loadMoreArgument
            settings.answers = answers
            return .pages(settings)
        case "search":
            try section.allowOnly(answerKeys.union(routingKeys).union(accessKeys).union([
                "kind", "upstream", "path", "parameter", "items", "minimumLength", "debounce",
            ]))
            let queryParameter = try section.string("parameter") ?? "q"
            if declared.contains(queryParameter) {
                throw ConfigurationError(section.location("parameters.\(queryParameter)"),
                                         "\(queryParameter) is the search's own query parameter (`parameter`); name this one otherwise")
            }
            return .search(SearchSettings(
                upstream: try section.requiredString("upstream"), routing: routing,
                definition: SearchResource.Definition(
                    path: try upstreamPath(section, "path", itemID: false, parameters: declared), parameter: queryParameter,
                    itemsAt: JSONPath(try section.string("items") ?? ""),
                    minimumLength: try section.integer("minimumLength", atLeast: 0) ?? 3,
                    debounce: try section.duration("debounce") ?? .milliseconds(300)),
                answers: answers))
        default:
            throw ConfigurationError(section.location("kind"), "unknown resource kind \"\(kind)\" (known: list, pages, search)")
        }
    }

    /// `upstreams.<name>.circuitBreaker`: `failures` (0 turns it off), `openFor` (above zero),
    /// `enabled` (false turns it off whatever `failures` says).
    private static func circuitBreaker(_ section: YAMLSection) throws(ConfigurationError) -> CircuitBreaker.Settings {
        try section.allowOnly(["enabled", "failures", "openFor"])
        var settings = CircuitBreaker.Settings()
        settings.failures = try section.integer("failures", atLeast: 0) ?? settings.failures
        if let openFor = try section.duration("openFor") {
            guard openFor > .zero else {
                throw ConfigurationError(section.location("openFor"), "expected a duration above 0, such as 10s, found \(openFor)")
            }
            settings.openFor = openFor
        }
        if try section.boolean("enabled") == false { settings.failures = 0 }
        return settings
    }

    /// Header names neither configured nor forwarded: the client writes them itself, or they
    /// describe one connection, not the request (RFC 9110 §7.6.1).
    static let reservedHeaderNames: Set<String> = [
        "host", "connection", "content-length", "transfer-encoding", "traceparent", "tracestate", "keep-alive", "te", "trailer",
        "upgrade", "proxy-connection",
    ]

    /// `upstreams.<name>.headers`: names that are tokens and not reserved; values with
    /// `${VAR}` expanded from `environment`, no control bytes. A value never appears in an
    /// error (it is a secret); its key and its variable's name do.
    private static func upstreamHeaders(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> [UpstreamHeader] {
        var headers: [UpstreamHeader] = []
        for key in section.mapping.keys {
            let name = key.string ?? "\(key)"
            let location = section.location(name)
            try checkHeaderName(name, at: location)
            guard let template = try section.string(name) else { continue }
            let value = try expandVariables(in: template, from: environment, at: location)
            guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
                throw ConfigurationError(location, "the value holds a control character (a line break would end the header)")
            }
            headers.append(UpstreamHeader(name: name, value: value))
        }
        return headers
    }

    /// `upstreams.<name>.forward`: header names, tokens, not reserved, each once.
    private static func forwardedHeaders(_ names: [String], at location: String) throws(ConfigurationError) -> [String] {
        for name in names { try checkHeaderName(name, at: location) }
        guard Set(names.map { $0.lowercased() }).count == names.count else { throw ConfigurationError(location, "names a header twice") }
        return names
    }

    private static func checkHeaderName(_ name: String, at location: String) throws(ConfigurationError) {
        guard !name.isEmpty, name.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
            throw ConfigurationError(location, "\"\(name)\" is not a header name")
        }
        guard !reservedHeaderNames.contains(name.lowercased()) else {
            throw ConfigurationError(location, "\(name) cannot be set: Tributary writes it itself, or it belongs to one connection")
        }
    }

    /// `text` with each `${NAME}` replaced by that environment variable's value; an unset
    /// variable fails, naming it.
    static func expandVariables(in text: String, from environment: [String: String], at location: String) throws(ConfigurationError) -> String {
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw ConfigurationError(location, "a ${ without its }")
            }
            let variable = String(rest[start.upperBound..<end])
            guard !variable.isEmpty, variable.utf8.allSatisfy({ ($0 | 0x20) &- 0x61 < 26 || $0 &- 0x30 < 10 || $0 == UInt8(ascii: "_") }) else {
                throw ConfigurationError(location, "${\(variable)} is not an environment variable's name")
            }
            guard let value = environment[variable] else {
                throw ConfigurationError(location, "the environment variable \(variable) is not set")
            }
            result += value
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    /// The keys of ``JSONAnswerSettings``, which every kind of resource takes.
    private static let answerKeys: Set<String> = ["coalesce", "staleIfError"]

    /// `coalesce` and `staleIfError` of a resource (`staleIfError` is off unless given, and
    /// then longer than zero: leaving it out is how to say "off").
    private static func answerSettings(_ section: YAMLSection) throws(ConfigurationError) -> JSONAnswerSettings {
        var settings = JSONAnswerSettings()
        settings.coalesce = try section.boolean("coalesce") ?? settings.coalesce
        if let staleIfError = try section.duration("staleIfError") {
            guard staleIfError > .zero else {
                throw ConfigurationError(section.location("staleIfError"), "expected a duration longer than 0s (leave the key out to turn stale answers off)")
            }
            settings.staleIfError = staleIfError
        }
        return settings
    }

    /// A required upstream path starting with `/`, whose placeholders are `parameters` of the
    /// resource and, when `itemID`, `{id}` exactly once (a detail or page path); a list or
    /// search path has no `{id}`.
    static func upstreamPath(
        _ section: YAMLSection, _ key: String, itemID: Bool, parameters: Set<String>
    ) throws(ConfigurationError) -> UpstreamPath {
        let text = try section.requiredString(key)
        guard let path = UpstreamPath(text) else {
            throw ConfigurationError(section.location(key), "expected a path starting with / whose {…} name parameters, found \"\(text)\"")
        }
        let ids = path.placeholders.filter { $0 == UpstreamPath.itemID }.count
        if itemID, ids != 1 {
            throw ConfigurationError(section.location(key), "must hold {id} exactly once (where each item's id goes), found \"\(text)\"")
        }
        if !itemID, ids > 0 {
            throw ConfigurationError(section.location(key), "{id} is for detail and page paths; this path names no item")
        }
        for name in path.placeholders where name != UpstreamPath.itemID && !parameters.contains(name) {
            let known = parameters.isEmpty ? "it declares none" : "declared: \(parameters.sorted().joined(separator: ", "))"
            throw ConfigurationError(section.location(key), "{\(name)} is not a parameter of the resource (\(known))")
        }
        return path
    }

    /// The keys of ``Routing``, which every kind of resource takes.
    private static let routingKeys: Set<String> = ["route", "parameters"]

    /// `route` (default `/<name>`) and `parameters` of resource `name`: every `{…}` segment of
    /// the route names a path parameter, and every path parameter has its segment.
    private static func routing(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> Routing {
        var parameters: [ParameterDefinition] = []
        for (parameterName, parameter) in try section.section("parameters")?.namedSections() ?? [] {
            parameters.append(try Self.parameter(parameter, named: parameterName))
        }
        parameters.sort { $0.name < $1.name }
        let configured = try section.string("route")
        let route = configured ?? "/\(name)"
        let location = section.location("route")
        guard route.hasPrefix("/"), !route.contains("?"), !route.contains("#") else {
            throw ConfigurationError(location, "expected a path starting with /, without a query, found \"\(route)\"")
        }
        // The default route is the name, which ``validate(file:)`` checks as a name.
        let segments = configured == nil ? [] : route.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        var named: [String] = []
        for (index, segment) in segments.enumerated() {
            guard !segment.isEmpty else { throw ConfigurationError(location, "has an empty segment: \"\(route)\"") }
            if segment.hasPrefix("{") || segment.hasSuffix("}") || segment.contains("{") || segment.contains("}") {
                guard segment.hasPrefix("{"), segment.hasSuffix("}"), segment.count > 2,
                      !segment.dropFirst().dropLast().contains(where: { $0 == "{" || $0 == "}" }) else {
                    throw ConfigurationError(location, "a parameter takes a whole segment, as in /teams/{team}/groups; found \"\(segment)\"")
                }
                guard index > 0 else {
                    throw ConfigurationError(location, "its first segment must be fixed text: a parameter there would take every other path")
                }
                named.append(String(segment.dropFirst().dropLast()))
            } else if index == 0, reservedFirstSegments.contains(String(segment)) {
                throw ConfigurationError(location, "/\(segment) is Tributary's own endpoint")
            }
        }
        for parameter in named {
            guard let definition = parameters.first(where: { $0.name == parameter }) else {
                throw ConfigurationError(location, "{\(parameter)} is not declared under parameters")
            }
            guard definition.location == .path else {
                throw ConfigurationError(location, "{\(parameter)} is declared in: query; a route segment is a path parameter")
            }
        }
        guard Set(named).count == named.count else { throw ConfigurationError(location, "names a parameter twice") }
        for definition in parameters where definition.location == .path && !named.contains(definition.name) {
            throw ConfigurationError(section.location("parameters.\(definition.name)"),
                                     "a path parameter needs its {\(definition.name)} segment in route (\(route)); or say in: query")
        }
        return Routing(route: route, parameters: parameters)
    }

    /// First segments a route may not take: the endpoints every service has.
    private static let reservedFirstSegments: Set<String> = ["streams", "events", "healthz", "readyz", "metrics", "openapi.json"]

    /// `resources.<name>.parameters.<parameter>`: `in`, `pattern`, `enum`, `default`, `required`.
    private static func parameter(_ section: YAMLSection, named name: String) throws(ConfigurationError) -> ParameterDefinition {
        try section.allowOnly(["in", "pattern", "enum", "default", "required"])
        guard !name.isEmpty, name != UpstreamPath.itemID, UpstreamPath("/{\(name)}") != nil else {
            throw ConfigurationError(section.location(""), "a parameter's name is letters, digits, - and _ (and not id, which names an item)")
        }
        let locationName = try section.string("in") ?? ParameterDefinition.Location.path.rawValue
        guard let location = ParameterDefinition.Location(rawValue: locationName) else {
            throw ConfigurationError(section.location("in"), "expected path or query, found \"\(locationName)\"")
        }
        let definition = ParameterDefinition(
            name: name, location: location, pattern: try section.string("pattern"), allowed: try section.strings("enum"),
            defaultValue: try section.string("default"), required: try section.boolean("required"))
        if let allowed = definition.allowed, allowed.isEmpty {
            throw ConfigurationError(section.location("enum"), "expected at least one value")
        }
        if location == .path {
            if definition.defaultValue != nil {
                throw ConfigurationError(section.location("default"), "a path parameter is always given: its segment is part of the route")
            }
            if definition.required == false {
                throw ConfigurationError(section.location("required"), "a path parameter is always required: its segment is part of the route")
            }
        }
        let validator: ParameterValidator
        do {
            validator = try ParameterValidator([definition])
        } catch {
            throw ConfigurationError(section.location("pattern"), "not a regular expression: \(error)")
        }
        if let value = definition.defaultValue, case .failure(let problem) = validator.values(from: [name: value]) {
            throw ConfigurationError(section.location("default"), "the default itself is refused: \(problem.message)")
        }
        return definition
    }

    private static func redisEndpoint(_ text: String, at location: String) throws(ConfigurationError) -> RedisEndpoint {
        do {
            return try RedisEndpoint(text)
        } catch {
            throw ConfigurationError(location, error.description)
        }
    }

    /// `cluster.redis` set (or replaced) from the environment or the command line, keeping
    /// the file's other cluster settings.
    private mutating func setRedis(_ text: String, at location: String) throws(ConfigurationError) {
        var cluster = self.cluster ?? clusterWithoutRedis ?? Cluster(redis: RedisEndpoint(host: "unset"))
        cluster.redis = try Self.redisEndpoint(text, at: location)
        self.cluster = cluster
        clusterWithoutRedis = nil
    }

    private static func baseURL(_ text: String, at location: String) throws(ConfigurationError) -> BaseURL {
        do {
            return try BaseURL(text)
        } catch {
            throw ConfigurationError(location, error.description)
        }
    }

    private mutating func apply(environment: [String: String]) throws(ConfigurationError) {
        if let listen = environment["TRIBUTARY_LISTEN"] {
            server.listen = try Self.listenAddress(listen, at: "TRIBUTARY_LISTEN")
        }
        if let workers = environment["TRIBUTARY_WORKERS"] {
            server.workers = try Self.workers(workers, at: "TRIBUTARY_WORKERS")
        }
        if let level = environment["TRIBUTARY_LOG_LEVEL"] { server.logLevel = level }
        if let redis = environment["TRIBUTARY_REDIS_URL"], !redis.isEmpty { try setRedis(redis, at: "TRIBUTARY_REDIS_URL") }
        if let secret = environment["TRIBUTARY_CLUSTER_SECRET"], !secret.isEmpty {
            clusterSecretFromEnvironment = try ClusterSecret(secret, at: "TRIBUTARY_CLUSTER_SECRET")
        }
        if let token = environment["TRIBUTARY_ADMIN_TOKEN"] { server.adminToken = token.isEmpty ? nil : token }
        if let origins = environment["TRIBUTARY_CORS_ORIGINS"] {
            server.corsOrigins = origins.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
        }
        let prefix = "TRIBUTARY_UPSTREAM_"
        for (variable, url) in environment where variable.hasPrefix(prefix) {
            let upperName = String(variable.dropFirst(prefix.count))
            guard let name = upstreams.keys.first(where: { $0.uppercased() == upperName }) else {
                throw ConfigurationError(variable, "no upstream named \(upperName.lowercased()) in the configuration (known: \(upstreams.keys.sorted().joined(separator: ", ")))")
            }
            upstreams[name]?.url = try Self.baseURL(url, at: variable)
        }
    }

    private mutating func apply(_ overrides: Overrides) throws(ConfigurationError) {
        if let listen = overrides.listen { server.listen = try Self.listenAddress(listen, at: "--listen") }
        if let workers = overrides.workers {
            guard workers >= 1 else { throw ConfigurationError("--workers", "expected a whole number ≥ 1") }
            server.workers = workers
        }
        if let level = overrides.logLevel { server.logLevel = level }
        if let redis = overrides.redis { try setRedis(redis, at: "--redis") }
        for pair in overrides.upstreams {
            guard let equals = pair.firstIndex(of: "=") else {
                throw ConfigurationError("--upstream", "expected NAME=URL, found \"\(pair)\"")
            }
            let name = String(pair[..<equals])
            guard upstreams[name] != nil else {
                throw ConfigurationError("--upstream", "no upstream named \(name) in the configuration (known: \(upstreams.keys.sorted().joined(separator: ", ")))")
            }
            upstreams[name]?.url = try Self.baseURL(String(pair[pair.index(after: equals)...]), at: "--upstream \(name)")
        }
    }

    /// A worker count: a whole number ≥ 1, or `auto` for one per online processor.
    private static func workers(_ text: String, at location: String) throws(ConfigurationError) -> Int {
        if text == "auto" { return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
        guard let count = Int(text), count >= 1 else {
            throw ConfigurationError(location, "expected a whole number ≥ 1 or auto, found \"\(text)\"")
        }
        return count
    }

    private static func listenAddress(_ text: String, at location: String) throws(ConfigurationError) -> ListenAddress {
        guard let address = ListenAddress(text) else { throw ConfigurationError(location, "expected HOST:PORT, found \"\(text)\"") }
        return address
    }

    private func validate(file: String) throws(ConfigurationError) {
        try validateAccess(file: file)
        if clusterWithoutRedis != nil {
            throw ConfigurationError("\(file): cluster.redis", "required: where the fleet's Redis is (or TRIBUTARY_REDIS_URL, --redis)")
        }
        if let cluster, cluster.secret == nil {
            throw ConfigurationError(
                "\(file): cluster.secret",
                "required with cluster.redis: the fleet's shared secret, which signs everything it writes to Redis "
                    + "(or TRIBUTARY_CLUSTER_SECRET; e.g. openssl rand -hex 32)")
        }
        guard Self.logLevels.contains(server.logLevel) else {
            throw ConfigurationError("\(file): server.logLevel", "expected one of \(Self.logLevels.sorted().joined(separator: ", ")), found \"\(server.logLevel)\"")
        }
        for (name, resource) in resources {
            guard upstreams[resource.upstream] != nil else {
                throw ConfigurationError("\(file): resources.\(name).upstream", "no upstream named \(resource.upstream) (known: \(upstreams.keys.sorted().joined(separator: ", ")))")
            }
            guard !["streams", "healthz", "readyz", "metrics", "events"].contains(name) else {
                throw ConfigurationError("\(file): resources.\(name)", "the name \(name) is reserved for Tributary's own endpoints")
            }
            // One plain path segment: no `{…}` that a route would read as a parameter, no `.`,
            // which separates a resource from its parameter on GET /events (`search.q`).
            guard !name.isEmpty, name.utf8.allSatisfy({ Self.resourceNameBytes.contains($0) }) else {
                throw ConfigurationError("\(file): resources.\(name)", "a resource name is made of letters, digits, - and _ only")
            }
        }
    }
}
