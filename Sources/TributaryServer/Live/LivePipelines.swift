import Aggregation
import EventLoop
import Fleet
import HTTPServer
import OpenCombine
import Synchronization
import TributaryConfiguration

/// The process's shared live pipelines of `kind: list` resources: one per ``SharingKey``
/// (resource, parameter values, identity) that some stream watches, however many streams on
/// however many workers watch it. Each runs on one worker, chosen by its key
/// (``SharedPipeline/runsOn``), so the pipelines spread over the workers as the fleet spreads
/// them over replicas, and every worker, that one included, follows it through its
/// ``WorkerPipelines``. In a fleet the agent shares each with the other replicas, on the
/// process's own loop (``SharedPipeline/home``).
///
/// ```
///  worker 1 streams ─┐                       ┌─ key groups{}            ─▶ pipeline on worker 2
///  worker 2 streams ─┼─ WorkerPipelines ─────┼─ key teamgroups{team=a}  ─▶ pipeline on worker 1
///                    │   (one follower       └─ key groups{}@1f2e…      ─▶ pipeline on worker 2 (alice's)
///                    │    per key and worker)
/// ```
///
/// Bounded: at most `maxLivePipelines` keys of a resource (503 `too_many_pipelines` beyond),
/// and at most `server.maxIdentities` identities with pipelines (503 `too_many_identities`).
/// A pipeline stops when its last subscriber leaves; a key of parameter values or an identity
/// is forgotten then too. A resource's one public document keeps its pipeline (stopped), and
/// with it the latest state, which its next subscriber gets at once, as a fleet's follower
/// needs when it is not sent the state again. Thread-safe: workers admit and release from
/// their own loops.
///
/// Shared fairly: one client (as its stream quota names it: a token's subject, else its
/// address, IPv6 per /64) may *start* at most its share of each bound
/// (`server.maxClientSharePercent` of it, at least one: ``Configuration/clientShare(of:)``),
/// 429 `too_many_client_pipelines` / `too_many_client_identities` beyond. Else a thousand
/// streams of distinct parameter values, or of distinct forwarded credentials, from one
/// client would take every pipeline and every identity, and every other client would get 503.
/// A stream that joins a running pipeline starts nothing and is not counted; the public
/// document, one per resource, is no one's. A key stays charged to the client that started
/// it until it is forgotten, even if that client left and others still follow it: a share
/// can never be given back twice, and what it counts is what the client made the process hold.
final class LivePipelines: ReloadTargets {
    /// In a fleet, the agent that shares every pipeline with the other replicas.
    private let fleet: LoopBound<ClusterAgent>?
    private let maxIdentities: Int
    private let table = Mutex(Table())

    private struct Table {
        var pipelines: [SharingKey: SharedPipeline] = [:]
        var perResource: [String: Int] = [:]
        /// Non-anonymous identities with pipelines: how many each has, and who started it.
        var identities: [Identity: (pipelines: Int, starter: String)] = [:]
        /// Who started each key's pipeline (every key but the public documents).
        var starters: [SharingKey: String] = [:]
        /// Keys each client started, by resource; identities each client started.
        var startedKeys: [Started: Int] = [:]
        var startedIdentities: [String: Int] = [:]
        /// How each worker makes the pipelines it runs, in the order the workers joined.
        var runners: [PipelineRunner] = []

        /// One more key of `resource` for `client` (`by`: +1 or -1), forgotten at zero.
        mutating func count(_ key: SharingKey, of client: String, by change: Int) {
            let started = Started(client: client, resource: key.resource)
            let now = startedKeys[started, default: 0] + change
            startedKeys[started] = now > 0 ? now : nil
        }

        mutating func countIdentity(of client: String, by change: Int) {
            let now = startedIdentities[client, default: 0] + change
            startedIdentities[client] = now > 0 ? now : nil
        }

        /// `key` is forgotten: its resource, its starter and its identity count it no more.
        mutating func forget(_ key: SharingKey) {
            perResource[key.resource, default: 1] -= 1
            if perResource[key.resource] == 0 { perResource[key.resource] = nil }
            if let starter = starters.removeValue(forKey: key) { count(key, of: starter, by: -1) }
            let identity = key.identity
            guard !identity.isAnonymous, var held = identities[identity] else { return }
            held.pipelines -= 1
            if held.pipelines > 0 {
                identities[identity] = held
            } else {
                identities[identity] = nil
                countIdentity(of: held.starter, by: -1)
            }
        }
    }

    /// A client's keys of one resource.
    private struct Started: Hashable {
        let client: String
        let resource: String
    }

    init(fleet: LoopBound<ClusterAgent>?, maxIdentities: Int) {
        self.fleet = fleet
        self.maxIdentities = maxIdentities
    }

    /// How a worker makes the pipelines it runs, on its loop: from the pipeline's definition,
    /// with the worker's upstream client and batch windows.
    typealias PipelineRunner = LoopBound<(SharedPipeline) -> any LiveSource>

    /// Sets how the worker on `runner`'s loop makes pipelines (each worker, at start and
    /// after every reload); the first call of a worker adds it to those that run pipelines.
    func setRunner(_ runner: PipelineRunner) {
        table.withLock { table in
            if let index = table.runners.firstIndex(where: { $0.loop === runner.loop }) {
                table.runners[index] = runner
            } else {
                table.runners.append(runner)
            }
        }
    }

    /// What bounds the pipelines of one resource: `maxLivePipelines`, and the share of it and
    /// of `server.maxIdentities` one client may start (`server.maxClientSharePercent`).
    struct Bounds {
        let maxPipelines: Int
        let clientSharePercent: Int
    }

    /// The pipeline of `request`'s key, for a worker that has its first stream of it, opened
    /// by `client` (as its stream quota names it): the one running for `definition`, or a new
    /// one; nil with the error when a bound is reached. Each admission is one follower, given
    /// back with ``release(_:)``.
    func admit(
        _ request: ResourceRequest, definition: Configuration.ResourceDefinition, refreshInterval: Duration, bounds: Bounds,
        client: String
    ) -> Result<SharedPipeline, HTTPError> {
        let key = request.key
        return table.withLock { table in
            if let pipeline = table.pipelines[key], pipeline.definition == definition {
                pipeline.followers += 1
                return .success(pipeline)
            }
            // A reload changed the resource: streams of the new definition get a pipeline of
            // their own, the old one lives on until its followers let go. The key keeps its
            // count, its starter and its identity's.
            let replacing = table.pipelines[key] != nil
            let identity = key.identity
            let newIdentity = !replacing && !identity.isAnonymous && table.identities[identity] == nil
            let charged = !replacing && key != .publicDocument(of: key.resource)
            // The bounds first: when the process is full, that is what every client is told.
            if !replacing, table.perResource[key.resource, default: 0] >= bounds.maxPipelines {
                return .failure(HTTPError(status: 503, code: "too_many_pipelines",
                                          message: "resource \(key.resource) runs its limit of \(bounds.maxPipelines) live pipelines"))
            }
            if newIdentity, table.identities.count >= maxIdentities {
                return .failure(HTTPError(status: 503, code: "too_many_identities",
                                          message: "the server runs live pipelines for its limit of \(maxIdentities) identities"))
            }
            if charged {
                let share = Configuration.clientShare(of: bounds.maxPipelines, percent: bounds.clientSharePercent)
                if table.startedKeys[Started(client: client, resource: key.resource), default: 0] >= share {
                    return .failure(HTTPError(status: 429, code: "too_many_client_pipelines", message:
                        "this client started its share of \(share) of resource \(key.resource)'s live pipelines; close a stream first"))
                }
            }
            if newIdentity {
                let share = Configuration.clientShare(of: maxIdentities, percent: bounds.clientSharePercent)
                if table.startedIdentities[client, default: 0] >= share {
                    return .failure(HTTPError(status: 429, code: "too_many_client_identities", message:
                        "this client started live pipelines for its share of \(share) identities; close a stream first"))
                }
            }
            guard !table.runners.isEmpty else {
                return .failure(HTTPError(status: 503, code: "starting", message: "the service is starting"))
            }
            let runner = table.runners[Self.spread(key, over: table.runners.count)]
            let pipeline = SharedPipeline(
                request: request, definition: definition, refreshInterval: refreshInterval, runner: runner, fleet: fleet)
            pipeline.followers = 1
            if !replacing {
                table.perResource[key.resource, default: 0] += 1
                if charged {
                    table.starters[key] = client
                    table.count(key, of: client, by: 1)
                }
                if newIdentity {
                    table.identities[identity] = (1, client)
                    table.countIdentity(of: client, by: 1)
                } else if !identity.isAnonymous {
                    table.identities[identity]!.pipelines += 1
                }
            }
            table.pipelines[key] = pipeline
            return .success(pipeline)
        }
    }

    /// Which of `count` workers runs the pipeline of `key`: the same one for the same key in
    /// every run (FNV-1a over the key's canonical text, not Swift's per-process seeded hash).
    static func spread(_ key: SharingKey, over count: Int) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.canonicalText.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return Int(hash % UInt64(count))
    }

    /// A worker's last stream of `pipeline`'s key went: one follower less; the key is
    /// forgotten with its last.
    func release(_ pipeline: SharedPipeline) {
        table.withLock { table in
            pipeline.followers -= 1
            guard pipeline.followers == 0, table.pipelines[pipeline.key] === pipeline,
                  pipeline.key != .publicDocument(of: pipeline.key.resource) else { return }
            table.pipelines[pipeline.key] = nil
            pipeline.home.execute { pipeline.retire() }
            table.forget(pipeline.key)
        }
    }

    /// Forgets the pipelines of `resource` that no worker follows (a reload removed or changed
    /// it): its public document's, kept while it was served, goes too.
    func forgetIdle(of resource: String) {
        table.withLock { table in
            for (key, pipeline) in table.pipelines where key.resource == resource && pipeline.followers == 0 {
                table.pipelines[key] = nil
                table.forget(key)
            }
        }
    }

    /// Refreshes the pipelines `aim` names that some stream follows, every identity's (`POST
    /// /<name>/reload[?team=core]` here, or from the fleet); returns how many. A public
    /// document kept stopped has nothing to refresh, and is not counted.
    func reload(_ aim: ReloadAim) -> Int {
        let pipelines = followed(aim)
        for pipeline in pipelines { pipeline.home.execute { pipeline.runningSource?.reload() } }
        return pipelines.count
    }

    /// How many pipelines `aim` names that some stream follows.
    func count(_ aim: ReloadAim) -> Int {
        followed(aim).count
    }

    private func followed(_ aim: ReloadAim) -> [SharedPipeline] {
        table.withLock { table in table.pipelines.values.filter { $0.followers > 0 && aim.aims(at: $0.key) } }
    }

    /// Live pipelines known, by resource (for tests and metrics).
    func count(of resource: String) -> Int {
        table.withLock { $0.perResource[resource] ?? 0 }
    }

    /// The loop each pipeline of `resource` runs on, with its parameter values (for tests).
    func runners(of resource: String) -> [(parameters: ParameterValues, loop: EventLoop)] {
        table.withLock { table in
            table.pipelines.values.filter { $0.key.resource == resource }.map { ($0.key.parameters, $0.runsOn) }
        }
    }

    /// Identities with live pipelines.
    var identityCount: Int {
        table.withLock { $0.identities.count }
    }

    /// Keys of `resource`, and identities, that `client` started and that still run (for tests).
    func started(by client: String, of resource: String) -> (pipelines: Int, identities: Int) {
        table.withLock { ($0.startedKeys[Started(client: client, resource: resource)] ?? 0, $0.startedIdentities[client] ?? 0) }
    }
}

/// One shared live pipeline: the key it is for, what it was asked with, the worker that runs
/// it, and its source, made the first time a worker follows it. `@unchecked Sendable`: its
/// local pipeline is touched on its runner's loop only, its source on ``home`` only,
/// its followers under ``LivePipelines``' lock.
final class SharedPipeline: @unchecked Sendable {
    let key: SharingKey
    /// The parameter values and the caller whose forwarded headers its upstream calls carry.
    let request: ResourceRequest
    let definition: Configuration.ResourceDefinition
    let refreshInterval: Duration
    /// The worker that runs it: its upstream calls go from that worker's client, through its
    /// batch windows.
    private let runner: LivePipelines.PipelineRunner
    /// In a fleet, the agent that shares it with the other replicas.
    private let fleet: LoopBound<ClusterAgent>?
    /// Workers following it (under the registry's lock).
    fileprivate var followers = 0
    /// The pipeline the runner made (runner's loop only).
    private var local: (any LiveSource)?
    /// What workers follow: the local pipeline, or in a fleet the fleet's (on ``home`` only).
    private var source: (any LiveSource)?

    fileprivate init(
        request: ResourceRequest, definition: Configuration.ResourceDefinition, refreshInterval: Duration,
        runner: LivePipelines.PipelineRunner, fleet: LoopBound<ClusterAgent>?
    ) {
        key = request.key
        self.request = request
        self.definition = definition
        self.refreshInterval = refreshInterval
        self.runner = runner
        self.fleet = fleet
    }

    /// The loop of the worker that runs it.
    var runsOn: EventLoop { runner.loop }

    /// Where its source lives and workers follow it from: the runner's loop; in a fleet the
    /// agent's, which bridges the runner's pipeline in while this replica leads or runs alone.
    var home: EventLoop { fleet?.loop ?? runner.loop }

    /// What workers follow, made now if it was not yet (on ``home``).
    var liveSource: any LiveSource {
        if let source { return source }
        let made: any LiveSource
        if let fleet {
            let bridge = RemoteLiveResource(name: key.resource, ownerLoop: runner.loop, source: { self.localSource }, loop: fleet.loop)
            made = fleet.value.adopt(bridge, key: key, maximumDocumentBytes: definition.upstream.policy.maxResponseBytes)
        } else {
            made = localSource
        }
        source = made
        return made
    }

    /// The runner's pipeline, made now if it was not yet (on the runner's loop).
    private var localSource: any LiveSource {
        if let local { return local }
        let made = runner.value(self)
        local = made
        return made
    }

    /// The source if it was made (on ``home``).
    fileprivate var runningSource: (any LiveSource)? { source }

    /// No worker will follow it again: its source lets go of what it holds (on ``home``).
    fileprivate func retire() {
        source?.retire()
    }
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
