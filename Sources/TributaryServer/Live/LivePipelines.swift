import Aggregation
import EventLoop
import HTTPServer
import OpenCombine
import Synchronization

/// The process's shared live pipelines of `kind: list` resources: one per ``SharingKey``
/// (resource, parameter values, identity) that some stream watches, however many streams on
/// however many workers watch it. Every pipeline runs on one loop, ``home`` (where the fleet's
/// agent runs too); workers follow it through their ``WorkerPipelines``.
///
/// ```
///  worker 1 streams ─┐                       ┌─ key groups{}            ─▶ pipeline (home loop)
///  worker 2 streams ─┼─ WorkerPipelines ─────┼─ key teamgroups{team=a}  ─▶ pipeline
///                    │   (one follower       └─ key groups{}@1f2e…      ─▶ pipeline (alice's)
///                    │    per key and worker)
/// ```
///
/// Bounded: at most `maxLivePipelines` keys of a resource (503 `too_many_pipelines` beyond),
/// and at most `server.maxIdentities` identities with pipelines (503 `too_many_identities`).
/// A key is forgotten when its last follower lets go; its pipeline stops when its last
/// subscriber leaves. Thread-safe: workers admit and release from their own loops.
final class LivePipelines: Sendable {
    /// Where every pipeline runs.
    let home: EventLoop
    private let maxIdentities: Int
    private let table = Mutex(Table())

    private struct Table {
        var pipelines: [SharingKey: SharedPipeline] = [:]
        var perResource: [String: Int] = [:]
        /// Non-anonymous identities with pipelines, and how many each has.
        var identities: [Identity: Int] = [:]
        /// Makes a pipeline's source, on the home loop (set by the worker that runs there).
        var factory: PipelineFactory?
    }

    init(home: EventLoop, maxIdentities: Int) {
        self.home = home
        self.maxIdentities = maxIdentities
    }

    /// How the home worker makes the source of a shared pipeline: from the resource's
    /// definition as the worker has mounted it. Called on ``home`` only.
    typealias PipelineFactory = LoopBound<(SharedPipeline) -> any LiveSource>

    /// Sets how pipelines are made (the home worker, at start and after every reload).
    func setFactory(_ factory: PipelineFactory) {
        table.withLock { $0.factory = factory }
    }

    /// The pipeline of `request`'s key, for a worker that has its first stream of it: the one
    /// running for `definition`, or a new one; nil with the error when a bound is reached.
    /// Each admission is one follower, given back with ``release(_:)``.
    func admit(
        _ request: ResourceRequest, definition: Configuration.ResourceDefinition, refreshInterval: Duration, maxPipelines: Int
    ) -> Result<SharedPipeline, HTTPError> {
        let key = request.key
        return table.withLock { table in
            if let pipeline = table.pipelines[key], pipeline.definition == definition {
                pipeline.followers += 1
                return .success(pipeline)
            }
            // A reload changed the resource: streams of the new definition get a pipeline of
            // their own, the old one lives on until its followers let go.
            let replacing = table.pipelines[key] != nil
            if !replacing, table.perResource[key.resource, default: 0] >= maxPipelines {
                return .failure(HTTPError(status: 503, code: "too_many_pipelines",
                                          message: "resource \(key.resource) runs its limit of \(maxPipelines) live pipelines"))
            }
            let identity = key.identity
            if !replacing, !identity.isAnonymous, table.identities[identity] == nil, table.identities.count >= maxIdentities {
                return .failure(HTTPError(status: 503, code: "too_many_identities",
                                          message: "the server runs live pipelines for its limit of \(maxIdentities) identities"))
            }
            guard let factory = table.factory else {
                return .failure(HTTPError(status: 503, code: "starting", message: "the service is starting"))
            }
            let pipeline = SharedPipeline(request: request, definition: definition, refreshInterval: refreshInterval, factory: factory)
            pipeline.followers = 1
            if !replacing {
                table.perResource[key.resource, default: 0] += 1
                if !identity.isAnonymous { table.identities[identity, default: 0] += 1 }
            }
            table.pipelines[key] = pipeline
            return .success(pipeline)
        }
    }

    /// A worker's last stream of `pipeline`'s key went: one follower less; the key is
    /// forgotten with its last.
    func release(_ pipeline: SharedPipeline) {
        table.withLock { table in
            pipeline.followers -= 1
            guard pipeline.followers == 0, table.pipelines[pipeline.key] === pipeline else { return }
            table.pipelines[pipeline.key] = nil
            let resource = pipeline.key.resource
            table.perResource[resource, default: 1] -= 1
            if table.perResource[resource] == 0 { table.perResource[resource] = nil }
            let identity = pipeline.key.identity
            if !identity.isAnonymous {
                table.identities[identity, default: 1] -= 1
                if table.identities[identity] == 0 { table.identities[identity] = nil }
            }
        }
    }

    /// Refreshes every pipeline of `resource`, every parameter value and identity (`POST
    /// /<name>/reload` here, or from the fleet).
    func reload(_ resource: String) {
        let pipelines = table.withLock { table in table.pipelines.values.filter { $0.key.resource == resource } }
        home.execute {
            for pipeline in pipelines { pipeline.runningSource?.reload() }
        }
    }

    /// Live pipelines known, by resource (for tests and metrics).
    func count(of resource: String) -> Int {
        table.withLock { $0.perResource[resource] ?? 0 }
    }

    /// Identities with live pipelines.
    var identityCount: Int {
        table.withLock { $0.identities.count }
    }
}

/// One shared live pipeline: the key it is for, what it was asked with, and its source,
/// made on the home loop the first time a worker follows it. `@unchecked Sendable`: its
/// source is touched on the home loop only, its followers under ``LivePipelines``' lock.
final class SharedPipeline: @unchecked Sendable {
    let key: SharingKey
    /// The parameter values and the caller whose forwarded headers its upstream calls carry.
    let request: ResourceRequest
    let definition: Configuration.ResourceDefinition
    let refreshInterval: Duration
    private let factory: LivePipelines.PipelineFactory
    /// Workers following it (under the registry's lock).
    fileprivate var followers = 0
    /// Home loop only.
    private var source: (any LiveSource)?

    fileprivate init(
        request: ResourceRequest, definition: Configuration.ResourceDefinition, refreshInterval: Duration,
        factory: LivePipelines.PipelineFactory
    ) {
        key = request.key
        self.request = request
        self.definition = definition
        self.refreshInterval = refreshInterval
        self.factory = factory
    }

    /// The pipeline's source, made now if it was not yet (on the home loop).
    var liveSource: any LiveSource {
        if let source { return source }
        let made = factory.value(self)
        source = made
        return made
    }

    /// The source if it was made (on the home loop).
    fileprivate var runningSource: (any LiveSource)? { source }

    /// The loop it runs on.
    var home: EventLoop { factory.loop }
}

/// The source of a pipeline asked for while the service stops: its states end at once, and
/// with them the streams that follow it.
final class EndedLiveSource: LiveSource {
    let name: String
    let states = Empty<LiveState, Never>().eraseToAnyPublisher()

    init(name: String) {
        self.name = name
    }

    func reload() {}
}
