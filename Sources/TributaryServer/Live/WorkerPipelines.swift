import Aggregation
import EventLoop
import HTTPServer
import OpenCombine

/// One worker's followers of the process's shared live pipelines (``LivePipelines``): one per
/// ``SharingKey`` it has streams of, shared by those streams. On the home loop a follower is
/// the pipeline itself; elsewhere a bridge to it (``RemoteLiveResource``), so a state crosses
/// to a worker once, however many of its streams show it. Loop-confined.
final class WorkerPipelines {
    private let loop: EventLoop
    private let registry: LivePipelines
    private var followers: [SharingKey: Follower] = [:]
    /// `server.maxClientSharePercent`, as the last reload said.
    var clientSharePercent: Int

    /// A worker's hold on one shared pipeline: its states here, and the streams showing them.
    fileprivate final class Follower {
        let pipeline: SharedPipeline
        let source: any LiveSource
        var streams = 0

        init(pipeline: SharedPipeline, source: any LiveSource) {
            self.pipeline = pipeline
            self.source = source
        }
    }

    init(loop: EventLoop, registry: LivePipelines, clientSharePercent: Int) {
        self.loop = loop
        self.registry = registry
        self.clientSharePercent = clientSharePercent
    }

    /// The view of a new stream of `request`'s key opened by `client` (as its stream quota
    /// names it): the shared pipeline running for `definition`, joined (or started), or why
    /// there cannot be one (503 at a bound, 429 beyond the client's share of it).
    func view(
        for request: ResourceRequest, definition: Configuration.ResourceDefinition, refreshInterval: Duration, maxPipelines: Int,
        client: String
    ) -> Result<any LiveViewModel, HTTPError> {
        let key = request.key
        if let follower = followers[key], follower.pipeline.definition == definition {
            follower.streams += 1
            return .success(FollowingView(follower, of: self))
        }
        let pipeline: SharedPipeline
        let bounds = LivePipelines.Bounds(maxPipelines: maxPipelines, clientSharePercent: clientSharePercent)
        switch registry.admit(request, definition: definition, refreshInterval: refreshInterval, bounds: bounds, client: client) {
        case .success(let admitted): pipeline = admitted
        case .failure(let error): return .failure(error)
        }
        // A follower of the key for an older definition (a reload changed the resource) is
        // replaced here; its streams keep it, and it lets go of its pipeline with their last.
        let source: any LiveSource = pipeline.home === loop
            ? pipeline.liveSource
            : RemoteLiveResource(name: key.resource, ownerLoop: pipeline.home, source: { pipeline.liveSource }, loop: loop)
        let follower = Follower(pipeline: pipeline, source: source)
        follower.streams = 1
        followers[key] = follower
        return .success(FollowingView(follower, of: self))
    }

    /// A stream of `follower`'s key went; with the worker's last, it lets go of the pipeline.
    fileprivate func streamLeft(_ follower: Follower) {
        follower.streams -= 1
        guard follower.streams == 0 else { return }
        if followers[follower.pipeline.key] === follower { followers[follower.pipeline.key] = nil }
        registry.release(follower.pipeline)
    }

    /// The view of one stream: the shared pipeline's states, and its `reload` trigger. It
    /// lives as long as its stream (its feed holds it), and tells the worker when it goes.
    private final class FollowingView: LiveViewModel {
        private let follower: Follower
        private let owner: WorkerPipelines

        init(_ follower: Follower, of owner: WorkerPipelines) {
            self.follower = follower
            self.owner = owner
        }

        deinit {
            owner.streamLeft(follower)
        }

        var states: AnyPublisher<LiveState, Never> { follower.source.states }
        var triggers: [String] { SharedLiveView.triggerNames }

        func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
            guard trigger == "reload" else { throw .unknownTrigger(trigger) }
            follower.source.reload()
        }
    }
}
