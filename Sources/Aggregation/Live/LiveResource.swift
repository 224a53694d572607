import CoreMetrics
public import EventLoop
public import HTTPCore
public import OpenCombine
import Rivers
public import Telemetry

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
/// given a new ``TraceContext`` every time. With `spans`, that trace is a root span,
/// `refresh NAME`, which ends with the refresh (or its cancellation), its upstream calls its
/// children.
///
/// With `firstDocument` (a list's ``ListResource/progressiveSnapshot(trace:loop:window:)``),
/// the refreshes until the pipeline has a complete document are progressive: their partial
/// documents are states marked ``LiveState/pending``, which only `progressive=true` streams
/// show. Once it has one, refreshes run `snapshot` as before; a pipeline that stops and
/// starts again begins progressive again.
public final class LiveResource {
    public let name: String
    public let refreshInterval: Duration
    private let refreshes = Trigger()
    private let timer: LoopTimer
    /// The shared states; subscribing starts the pipeline, the last cancel stops it.
    public let states: AnyPublisher<LiveState, Never>

    /// `reusedDocument` says whether the document a refresh just delivered is its previous
    /// one, as the source knows (a list whose every call was a `304`,
    /// ``ListResource/reusedLastDocument``): the state then stays as it was, without
    /// serializing, hashing and comparing the document again.
    public init(
        name: String, refreshInterval: Duration, loop: EventLoop, spans: Spans? = nil,
        snapshot: @escaping (TraceContext) -> AnyPublisher<JSON, ResourceError>,
        firstDocument: ((TraceContext) -> AnyPublisher<DocumentProgress, ResourceError>)? = nil,
        reusedDocument: (() -> Bool)? = nil
    ) {
        self.name = name
        self.refreshInterval = refreshInterval
        let refreshes = self.refreshes
        timer = LoopTimer(loop: loop) { refreshes.activate(for: Refresh.now) }
        let timer = self.timer
        let running = Meter(label: "tributary_live_pipelines", dimensions: [("resource", name)])
        let first = FirstDocumentState()
        states = Publishers.PublishAndRepeat(onOutputFrom: refreshes.signal(activatedBy: Refresh.now)) {
            () -> AnyPublisher<Result<DocumentProgress, ResourceError>, Never> in
            let span = spans?.refresh(resource: name)
            let trace = span?.trace ?? TraceContext()
            let refresh = if !first.isComplete, let firstDocument {
                firstDocument(trace).asResult().eraseToAnyPublisher()
            } else {
                snapshot(trace).map { DocumentProgress(document: $0, isComplete: true) }.asResult().eraseToAnyPublisher()
            }
            guard let span else { return refresh }
            return refresh.handleEvents(receiveCompletion: { _ in span.end() }, receiveCancel: { span.end() }).eraseToAnyPublisher()
        }
        .handleEvents(
            receiveSubscription: { _ in
                first.isComplete = false
                running.increment()
            },
            receiveOutput: { result in
                // A partial document is not the end of a refresh: the next counts from the complete one.
                if case .success(let progress) = result, !progress.isComplete { return }
                if case .success = result { first.isComplete = true }
                timer.schedule(after: refreshInterval)
            },
            receiveCancel: {
                timer.cancel()
                running.decrement()
            })
        .scan(LiveState()) { state, result in
            if case .success(let progress) = result, progress.isComplete, state.snapshot != nil, state.error == nil, !state.pending,
               reusedDocument?() == true {
                return state
            }
            return state.applying(result)
        }
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

/// Whether a running pipeline has had a complete document (its refreshes are then whole
/// snapshots). Loop-confined, as the pipeline is.
private final class FirstDocumentState {
    var isComplete = false
}
