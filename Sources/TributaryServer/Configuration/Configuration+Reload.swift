import Aggregation

/// What a configuration reload (`SIGHUP`, docs/operations.md, "Reloading the configuration") may change
/// while the service runs, and what it compares to decide which live streams go on.
extension Configuration {
    /// The settings a running process cannot take up, by key: the listening socket, the
    /// threads, the logger, the HTTP server's limits, the event stream hub's timer and limits,
    /// and the fleet's Redis link are all made once at start. A reload keeps their running
    /// values and says which ones need a restart.
    public static let restartOnlySettings: [(key: String, differs: @Sendable (Configuration, Configuration) -> Bool)] = [
        ("server.listen", { $0.server.listen != $1.server.listen }),
        ("server.workers", { $0.server.workers != $1.server.workers }),
        ("server.logLevel", { $0.server.logLevel != $1.server.logLevel }),
        ("server.requestTimeout", { $0.server.requestTimeout != $1.server.requestTimeout }),
        ("server.maxHeaderBytes", { $0.server.maxHeaderBytes != $1.server.maxHeaderBytes }),
        ("server.maxBodyBytes", { $0.server.maxBodyBytes != $1.server.maxBodyBytes }),
        ("server.maxConnections", { $0.server.maxConnections != $1.server.maxConnections }),
        ("server.shutdownTimeout", { $0.server.shutdownTimeout != $1.server.shutdownTimeout }),
        ("server.maxIdentities", { $0.server.maxIdentities != $1.server.maxIdentities }),
        // The rate limiter's table is made once, at its size.
        ("server.maxRateLimitBuckets", { $0.server.maxRateLimitBuckets != $1.server.maxRateLimitBuckets }),
        ("sse", { $0.sse != $1.sse }),
        ("cluster", { $0.cluster != $1.cluster }),
        // The keys, the key set's fetcher and the verified tokens are made once, at start.
        ("auth.jwt", { $0.auth.jwt != $1.auth.jwt }),
    ]

    /// The keys of ``restartOnlySettings`` whose value in `self` differs from `running`'s.
    public func restartOnlyChanges(from running: Configuration) -> [String] {
        Self.restartOnlySettings.filter { $0.differs(self, running) }.map(\.key)
    }

    /// `self` with the restart-only settings of `running`: what a reload applies. Everything
    /// else (`upstreams`, `resources`, `auth.required`, `server.adminToken`, `server.corsOrigins`,
    /// `server.staleIfErrorBytes`, `server.rateLimit`, `server.trustedProxies`,
    /// `server.maxStreamsPerClient`, `server.maxClientSharePercent`) is `self`'s.
    public func keepingRestartOnlySettings(of running: Configuration) -> Configuration {
        var applied = self
        let (adminToken, corsOrigins, staleIfErrorBytes) = (server.adminToken, server.corsOrigins, server.staleIfErrorBytes)
        applied.server = running.server
        applied.server.adminToken = adminToken
        applied.server.corsOrigins = corsOrigins
        applied.server.staleIfErrorBytes = staleIfErrorBytes
        applied.server.rateLimit = server.rateLimit
        applied.server.trustedProxies = server.trustedProxies
        applied.server.maxStreamsPerClient = server.maxStreamsPerClient
        applied.server.maxClientSharePercent = server.maxClientSharePercent
        applied.auth.jwt = running.auth.jwt
        applied.sse = running.sse
        applied.cluster = running.cluster
        applied.clusterWithoutRedis = nil
        return applied
    }

    /// What a pipeline of resource `name` is made of: its own settings and how it calls its
    /// upstream. Two configurations with the same definition run the same pipeline, so its
    /// live streams may go on across a reload. An upstream's `poolSize` and `maxQueue` are not
    /// part of it: they bound the process's connection budget and the worker's pool, which
    /// follow them in place.
    public func definition(of name: String) -> ResourceDefinition? {
        guard let resource = resources[name], var upstream = upstreams[resource.upstream] else { return nil }
        let pool = UpstreamSettings(url: upstream.url)
        upstream.poolSize = pool.poolSize
        upstream.maxQueue = pool.maxQueue
        let access = access(of: name)
        return ResourceDefinition(resource: resource, upstream: upstream, authRequired: access.authRequired, scopes: access.scopes)
    }

    /// A resource's settings with those of the upstream it calls, pool limits left out.
    public struct ResourceDefinition: Equatable, Sendable {
        public let resource: Resource
        public let upstream: UpstreamSettings
        /// Who may see it (`auth`): a stream opened without a token, or with one lacking a
        /// scope, must not outlive a reload that requires it. (Rate limits are not part of
        /// it: a reload changes them in place.)
        public let authRequired: Bool
        public let scopes: [String]
    }
}
