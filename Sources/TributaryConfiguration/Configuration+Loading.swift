import HTTPCore
import Redis
import UpstreamClient

/// Reading a configuration: the file, then the environment (`TRIBUTARY_*`), then the command
/// line, each value checked where it is read so that a bad one names its key, its variable or
/// its option; then the whole checked. What each key takes is declared in ``Settings``.
extension Configuration {
    /// What the command line says, on top of the file and the environment.
    public struct Overrides: Sendable {
        public var listen: String?
        public var workers: Int?
        public var logLevel: String?
        public var logFormat: String?
        /// `NAME=URL` pairs from `--upstream`.
        public var upstreams: [String] = []
        /// `--redis URL`: `cluster.redis`.
        public var redis: String?

        public init(
            listen: String? = nil, workers: Int? = nil, logLevel: String? = nil, logFormat: String? = nil, upstreams: [String] = [],
            redis: String? = nil
        ) {
            self.listen = listen
            self.workers = workers
            self.logLevel = logLevel
            self.logFormat = logFormat
            self.upstreams = upstreams
            self.redis = redis
        }

        /// The options given, by name (`--listen`) as ``Settings`` declares them, with their text.
        var given: [String: String] {
            let options: [(String, String?)] = [
                ("--listen", listen), ("--workers", workers.map(String.init)), ("--log-level", logLevel), ("--log-format", logFormat),
                ("--redis", redis),
            ]
            return Dictionary(uniqueKeysWithValues: options.compactMap { name, text in text.map { (name, $0) } })
        }
    }

    /// The configuration from `yaml` (the text of `file`), then `environment` (`TRIBUTARY_*`),
    /// then `overrides`; validated as a whole.
    public static func load(
        yaml: String, file: String, environment: [String: String] = [:], overrides: Overrides = .init()
    ) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        // The fleet's settings wait here for a Redis, which the environment or the command line may give.
        var cluster = Cluster.defaults
        let root = try YAMLSection.root(yaml: yaml, file: file)
        let clusterSection = try configuration.read(root, cluster: &cluster, environment: environment)

        for source in [environment, overrides.given] {
            try Server.fields.override(from: source, &configuration.server)
            try Cluster.fields.override(from: source, &cluster)
        }
        try OTLPSettings.fields.override(from: environment, &configuration.telemetry.otlp)
        try configuration.overrideUpstreamURLs(environment: environment, options: overrides.upstreams)

        if cluster.redis != Cluster.defaults.redis {
            configuration.cluster = cluster
        } else if clusterSection {
            throw ConfigurationError("\(file): cluster.redis", "required: where the fleet's Redis is (or TRIBUTARY_REDIS_URL, --redis)")
        }
        try configuration.validate(file: file)
        return configuration
    }

    /// The levels a log line may have, `server.logLevel`.
    static let logLevels: Set<String> = ["trace", "debug", "info", "notice", "warning", "error", "critical"]

    /// The file's sections into `self`, and its `cluster:` into `cluster`; whether it had one.
    private mutating func read(_ root: YAMLSection, cluster: inout Cluster, environment: [String: String]) throws(ConfigurationError) -> Bool {
        try root.allowOnlyDeclared()
        if let section = try root.section("server") {
            try section.allowOnlyDeclared()
            try Server.fields.read(section, into: &server)
            server.rateLimit = try section.section("rateLimit").map { section throws(ConfigurationError) in try Self.rateLimit(section) }
        }
        if let section = try root.section("auth") {
            auth = try Self.auth(section, environment: environment)
        }
        if let section = try root.section("sse") {
            try section.allowOnlyDeclared()
            try EventStreams.fields.read(section, into: &sse)
        }
        let clusterSection = try root.section("cluster")
        if let clusterSection {
            try clusterSection.allowOnlyDeclared()
            try Cluster.fields.read(clusterSection, into: &cluster)
        }
        try readTelemetry(root)
        for (name, section) in try root.section("upstreams")?.namedSections() ?? [] {
            upstreams[name] = try Self.upstream(section, environment: environment)
        }
        for (name, section) in try root.section("resources")?.namedSections() ?? [] {
            resources[name] = try Self.resource(section, named: name)
            resourceAccess[name] = try Self.resourceAccess(section)
        }
        return clusterSection != nil
    }

    /// `TRIBUTARY_UPSTREAM_<NAME>=URL` (an upstream of that name upper-cased), then each
    /// `--upstream NAME=URL`.
    private mutating func overrideUpstreamURLs(environment: [String: String], options: [String]) throws(ConfigurationError) {
        let prefix = Settings.upstreamURL.environment!.replacing("<NAME>", with: "")
        for (variable, url) in environment where variable.hasPrefix(prefix) {
            let upperName = String(variable.dropFirst(prefix.count))
            guard let name = upstreams.keys.first(where: { $0.uppercased() == upperName }) else {
                throw ConfigurationError(variable, "no upstream named \(upperName.lowercased()) in the configuration (known: \(upstreams.keys.sorted().joined(separator: ", ")))")
            }
            upstreams[name]?.url = try Self.baseURL(url, at: variable)
        }
        for pair in options {
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

    static func baseURL(_ text: String, at location: String) throws(ConfigurationError) -> BaseURL {
        try SettingType<BaseURL>.baseURL.parse(text, location)!
    }

    /// What resource names are made of: ASCII letters, digits, `-` and `_`.
    package static let resourceNameBytes = Set(Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_".utf8))

    private func validate(file: String) throws(ConfigurationError) {
        try validateAccess(file: file)
        if let cluster, cluster.secret == nil {
            throw ConfigurationError(
                "\(file): cluster.secret",
                "required with cluster.redis: the fleet's shared secret, which signs everything it writes to Redis "
                    + "(or TRIBUTARY_CLUSTER_SECRET; e.g. openssl rand -hex 32)")
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

extension Array {
    /// Puts into `root` each field's value that `source` (the environment, or the command
    /// line's options) gives by a name ``Setting`` declares for it: its variable, its option.
    func override<Root>(from source: [String: String], _ root: inout Root) throws(ConfigurationError) where Element == Field<Root> {
        for field in self {
            for name in [field.setting.environment, field.setting.optionName] {
                guard let name, let text = source[name] else { continue }
                try field.override(text, name, &root)
            }
        }
    }
}
