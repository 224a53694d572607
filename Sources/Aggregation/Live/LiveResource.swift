import CoreMetrics
public import EventLoop
public import HTTPCore
public import OpenCombine
import Rivers

/// A resource kept live for everyone watching it: ONE pipeline per worker, shared by all
/// subscribers, which refreshes on an interval and on ``reload()``, and runs only while
/// someone is subscribed (the last subscriber leaving cancels it, upstream calls included).
///
/// ```
/// reload ─┐
/// timer  ─┴▶ PublishAndRepeat { snapshot().asResult() } ─▶ scan(LiveState) ─▶ removeDuplicates ─▶ shareLatest
///                                                                                 ├─▶ subscriber 1 (latest state)
///                                                                                 └─▶ subscriber 2
/// ```
///
/// The refresh interval counts from the end of the previous refresh, so a slow upstream is
/// never asked again before it answered. A new subscriber gets the latest state at once; a
/// slow one gets the latest when it asks for more, never a queue. The gauge
/// `tributary_live_pipelines{resource}` counts the pipelines running.
///
/// No one request causes a refresh, so each refresh is a trace of its own: `snapshot` is
/// given a new ``TraceContext`` every time.
public final class LiveResource {
    public let name: String
    public let refreshInterval: Duration
    private let refreshes = Trigger()
    private let timer: LoopTimer
    /// The shared states; subscribing starts the pipeline, the last cancel stops it.
    public let states: AnyPublisher<LiveState, Never>

    public init(name: String, refreshInterval: Duration, loop: EventLoop, snapshot: @escaping (TraceContext) -> AnyPublisher<JSON, ResourceError>) {
        self.name = name
        self.refreshInterval = refreshInterval
        let refreshes = self.refreshes
        timer = LoopTimer(loop: loop) { refreshes.activate(for: Refresh.now) }
        let timer = self.timer
        let running = Meter(label: "tributary_live_pipelines", dimensions: [("resource", name)])
        states = Publishers.PublishAndRepeat(onOutputFrom: refreshes.signal(activatedBy: Refresh.now)) {
            snapshot(TraceContext()).asResult()
        }
        .handleEvents(
            receiveSubscription: { _ in running.increment() },
            receiveOutput: { _ in timer.schedule(after: refreshInterval) },
            receiveCancel: {
                timer.cancel()
                running.decrement()
            })
        .scan(LiveState()) { state, result in state.applying(result) }
        .removeDuplicates()
        .shareLatest()
        .eraseToAnyPublisher()
    }

    /// Refreshes now, for every subscriber (cancelling a refresh in progress).
    public func reload() {
        refreshes.activate(for: Refresh.now)
    }

    private enum Refresh: Hashable {
        case now
    }
}
