import Aggregation
import EventLoop
import HTTPServer
import OpenCombine
import Rivers
import TributaryConfiguration

/// One worker's followers of the process's shared live pipelines (``LivePipelines``): one per
/// ``SharingKey`` it has streams of, shared by those streams (and one projection of it per
/// `fields` they asked for). A follower is a bridge to the pipeline (``RemoteLiveResource``),
/// so a state crosses to a worker once, however many of its streams show it.
///
/// The worker that runs a pipeline follows it through a bridge too, like every other worker.
/// A new state then reaches each worker as a job on its loop, all of them queued before any
/// fans out, and the workers write to their streams side by side. Were the runner's streams
/// the pipeline's own subscribers, it would write to every one of them before reaching the
/// bridge that starts another worker (wherever that bridge sits among them): the workers would
/// fan out one after the other, at one worker's pace. Loop-confined.
final class WorkerPipelines {
    private let loop: EventLoop
    private let registry: LivePipelines
    private var followers: [SharingKey: Follower] = [:]
    /// `server.maxClientSharePercent`, as the last reload said.
    var clientSharePercent: Int

    /// A worker's hold on one shared pipeline: its states here, the streams showing them, and
    /// the projections of its documents those streams asked for (`fields`), each made once
    /// here and shared by every stream asking the same fields.
    fileprivate final class Follower {
        let pipeline: SharedPipeline
        let source: any LiveSource
        var streams = 0
        private var projections: [FieldSelection: (states: AnyPublisher<LiveState, Never>, streams: Int)] = [:]

        init(pipeline: SharedPipeline, source: any LiveSource) {
            self.pipeline = pipeline
            self.source = source
        }

        /// The states as `fields` show them, for one more stream: projected once per state,
        /// however many streams ask the same fields; a state whose projection did not change
        /// is not sent again.
        func states(keeping fields: FieldSelection) -> AnyPublisher<LiveState, Never> {
            guard !fields.keepsEverything else { return source.states }
            if let projection = projections[fields] {
                projections[fields]?.streams += 1
                return projection.states
            }
            // A failed item's error, and the marker of one still pending, whatever is asked.
            var always = ["error"]
            if case .list(let settings) = pipeline.definition.resource { always.append(settings.definition.pendingMember) }
            let states = source.states.map { fields.projecting($0, always: always) }.removeDuplicates().shareLatest().eraseToAnyPublisher()
            projections[fields] = (states, 1)
            return states
        }

        /// A stream that asked for `fields` went; with the last of them, their projection.
        func left(keeping fields: FieldSelection) {
            guard !fields.keepsEverything, let projection = projections[fields] else { return }
            projections[fields] = projection.streams > 1 ? (projection.states, projection.streams - 1) : nil
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
            return .success(FollowingView(follower, keeping: request.fields, of: self))
        }
        let pipeline: SharedPipeline
        let bounds = LivePipelines.Bounds(maxPipelines: maxPipelines, clientSharePercent: clientSharePercent)
        switch registry.admit(request, definition: definition, refreshInterval: refreshInterval, bounds: bounds, client: client) {
        case .success(let admitted): pipeline = admitted
        case .failure(let error): return .failure(error)
        }
        // A follower of the key for an older definition (a reload changed the resource) is
        // replaced here; its streams keep it, and it lets go of its pipeline with their last.
        // A bridge on the pipeline's own worker too: see the type's comment.
        let source = RemoteLiveResource(name: key.resource, ownerLoop: pipeline.home, source: { pipeline.liveSource }, loop: loop)
        let follower = Follower(pipeline: pipeline, source: source)
        follower.streams = 1
        followers[key] = follower
        return .success(FollowingView(follower, keeping: request.fields, of: self))
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
        private let fields: FieldSelection
        private let owner: WorkerPipelines
        let states: AnyPublisher<LiveState, Never>

        init(_ follower: Follower, keeping fields: FieldSelection, of owner: WorkerPipelines) {
            self.follower = follower
            self.fields = fields
            self.owner = owner
            states = follower.states(keeping: fields)
        }

        deinit {
            follower.left(keeping: fields)
            owner.streamLeft(follower)
        }

        var triggers: [String] { SharedLiveView.triggerNames }

        func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
            guard trigger == "reload" else { throw .unknownTrigger(trigger) }
            follower.source.reload()
        }
    }
}
