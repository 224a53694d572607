import Aggregation
import CoreMetrics
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
    private var subscriberGauges: [String: Meter] = [:]

    init(loop: EventLoop, settings: Configuration.EventStreams) {
        self.settings = settings
        heartbeatTimer = LoopTimer(loop: loop) { [unowned self] in
            for stream in streams.values { stream.heartbeat() }
        }
        heartbeatTimer.scheduleRepeating(every: settings.heartbeat)
    }

    /// Live streams now.
    var count: Int { streams.count }

    /// Answers `request` with an event stream of `view`, a view of `resource` (503 when the
    /// worker has `sse.maxSubscribers` streams already). The gauge
    /// `tributary_sse_subscribers{resource}` counts the live streams.
    func open(_ request: ServerRequest, resource: String, view: @autoclosure () -> any LiveViewModel) {
        guard streams.count < settings.maxSubscribers else {
            return request.respond(HTTPError(status: 503, code: "too_many_subscribers",
                                             message: "the server is at its limit of \(settings.maxSubscribers) live streams"),
                                   headers: [("Retry-After", "5")])
        }
        let subscribers = gauge(for: resource)
        let stream = EventStream(id: .random(), request: request, resource: resource, view: view()) { [unowned self] closed in
            streams[closed.id] = nil
            subscribers.decrement()
        }
        streams[stream.id] = stream
        subscribers.increment()
        request.limitSocketSendBuffer(to: settings.sendBuffer)
        stream.start(retry: settings.retry)
    }

    private func gauge(for resource: String) -> Meter {
        if let meter = subscriberGauges[resource] { return meter }
        let meter = Meter(label: "tributary_sse_subscribers", dimensions: [("resource", resource)])
        subscriberGauges[resource] = meter
        return meter
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
