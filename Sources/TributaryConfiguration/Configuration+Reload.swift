import Aggregation

/// What a configuration reload (`SIGHUP`, docs/operations.md, "Reloading the configuration") may change
/// while the service runs, and what it compares to decide which live streams go on.
extension Configuration {
    /// The settings a running process cannot take up, by key (``Settings/restartOnly``: each
    /// declared `reload: .restart`). A reload keeps their running values and says which ones
    /// need a restart.
    public static var restartOnlySettings: [(key: String, differs: @Sendable (Configuration, Configuration) -> Bool)] {
        Settings.restartOnly.map { ($0.key, $0.differs) }
    }

    /// The keys of ``restartOnlySettings`` whose value in `self` differs from `running`'s.
    public func restartOnlyChanges(from running: Configuration) -> [String] {
        Settings.restartOnly.filter { $0.differs(self, running) }.map(\.key)
    }

    /// `self` with the restart-only settings of `running`: what a reload applies. Everything
    /// else (`upstreams`, `resources`, `auth.required`, the server's settings a reload
    /// applies) is `self`'s.
    public func keepingRestartOnlySettings(of running: Configuration) -> Configuration {
        var applied = self
        for rule in Settings.restartOnly { rule.keep(&applied, running) }
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
