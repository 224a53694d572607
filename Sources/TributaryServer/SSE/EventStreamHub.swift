import Aggregation
import Libevent
import OpenCombine

/// The live event streams of one worker: it opens them, knows them by id (the streams
/// registry: a stream's triggers and inputs are reached over HTTP through it), sends their
/// heartbeats from one shared timer, and forgets them, view model and all, when their client
/// goes. Loop-confined.
final class EventStreamHub {
    private let settings: Configuration.EventStreams
    private var streams: [StreamID: EventStream] = [:]
    private var heartbeatTimer: LoopTimer!

    init(loop: EventLoop, settings: Configuration.EventStreams) {
        self.settings = settings
        heartbeatTimer = LoopTimer(loop: loop) { [unowned self] in
            for stream in streams.values { stream.heartbeat() }
        }
        heartbeatTimer.scheduleRepeating(every: settings.heartbeat)
    }

    /// Live streams now.
    var count: Int { streams.count }

    /// Answers `request` with an event stream of `view`, a view of `resource`.
    @discardableResult
    func open(_ request: ServerRequest, resource: String, view: any LiveViewModel) -> StreamID {
        let stream = EventStream(id: .random(), request: request, resource: resource, view: view) { [unowned self] closed in
            streams[closed.id] = nil
        }
        streams[stream.id] = stream
        request.limitSocketSendBuffer(to: settings.sendBuffer)
        stream.start(retry: settings.retry)
        return stream.id
    }

    /// The view model of the live stream named `id`, if there is one.
    func view(of id: String) -> (any LiveViewModel)? {
        StreamID(id).flatMap { streams[$0]?.view }
    }

    /// The view models of every live stream of `resource`.
    func views(of resource: String) -> [any LiveViewModel] {
        streams.values.filter { $0.resource == resource }.map(\.view)
    }

    /// Ends every stream (shutdown).
    func finishAll() {
        for stream in Array(streams.values) { stream.finish() }
    }
}
