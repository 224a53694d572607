import Aggregation
import Libevent
import OpenCombine

/// The live event streams of one worker: it opens them, knows them by id (so a stream's
/// triggers can be reached over HTTP), sends their heartbeats from one shared timer, and
/// forgets them when their client goes. Loop-confined.
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

    /// Answers `request` with an event stream of `states`.
    @discardableResult
    func open(_ request: ServerRequest, triggers: [String], inputs: [String] = [], states: some Publisher<LiveState, Never>) -> StreamID {
        let stream = EventStream(id: .random(), request: request) { [unowned self] closed in
            streams[closed.id] = nil
        }
        streams[stream.id] = stream
        request.limitSocketSendBuffer(to: settings.sendBuffer)
        stream.start(retry: settings.retry, triggers: triggers, inputs: inputs, states: states)
        return stream.id
    }

    /// Ends every stream (shutdown).
    func finishAll() {
        for stream in Array(streams.values) { stream.finish() }
    }
}
