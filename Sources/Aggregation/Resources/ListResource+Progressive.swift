public import EventLoop
public import HTTPCore
public import OpenCombine

/// One step of a progressive first document: the document so far (items still waiting for
/// their details marked pending), or the complete one, which ends it.
public struct DocumentProgress: Sendable {
    public let document: JSON
    public let isComplete: Bool

    public init(document: JSON, isComplete: Bool) {
        self.document = document
        self.isComplete = isComplete
    }
}

extension ListResource {
    /// A live pipeline's first document, progressively (DESIGN.md, part 4, "Progressive first
    /// documents"): as soon as the list is known, the list with every item still waiting for
    /// its details marked (`"pending": true`, ``Definition/pendingMember``); then, as details
    /// (or batches) arrive, the document so far, at most one per `window` (arrivals within it
    /// go as one); then the complete document, the same bytes ``snapshot(trace:)`` gives, and
    /// the end. The same calls as one snapshot: the list call and each detail or batch call
    /// once. Fails as the snapshot fails. Loop-confined to `loop`, which runs its window.
    public func progressiveSnapshot(trace: TraceContext, loop: EventLoop, window: Duration) -> AnyPublisher<DocumentProgress, ResourceError> {
        ProgressiveSnapshot(resource: self, trace: trace, loop: loop, window: window).eraseToAnyPublisher()
    }
}

/// What a fan-out tells of a progressive first document: the list is known (the first
/// partial document goes at once), an item settled (the latest partial document goes when
/// the window ends). The complete document is the fan-out's result, not told here; the
/// fan-out stops it when it has one, or is cancelled. Loop-confined.
final class FirstDocumentProgress {
    private let window: Duration
    private let send: (JSON) -> Void
    private var timer: LoopTimer?
    /// Whether the first partial document went: arrivals before it are in it.
    private var started = false
    /// Makes the latest partial document, until the window ends.
    private var latest: (() -> JSON?)?

    init(loop: EventLoop, window: Duration, send: @escaping (JSON) -> Void) {
        self.window = window
        self.send = send
        timer = LoopTimer(loop: loop) { [weak self] in self?.windowEnded() }
    }

    /// The list is known and some details are still awaited: `partial` is the first document.
    func listed(_ partial: () -> JSON) {
        guard !started, timer != nil else { return }
        started = true
        send(partial())
    }

    /// An item (or a batch of them) settled: `partial` makes the document with it, sent when
    /// the window that this arrival opens, or that is open, ends.
    func settled(_ partial: @escaping () -> JSON?) {
        guard started, let timer else { return }
        latest = partial
        if !timer.isScheduled { timer.schedule(after: window) }
    }

    /// The document is complete, failed or no longer wanted: nothing more goes.
    func stop() {
        timer?.cancel()
        timer = nil
        latest = nil
    }

    private func windowEnded() {
        guard let latest else { return }
        self.latest = nil
        if let document = latest() { send(document) }
    }
}

/// ``ListResource/progressiveSnapshot(trace:loop:window:)`` as a publisher.
private struct ProgressiveSnapshot: Publisher {
    typealias Output = DocumentProgress
    typealias Failure = ResourceError

    let resource: ListResource
    let trace: TraceContext
    let loop: EventLoop
    let window: Duration

    func receive<Downstream: Subscriber>(subscriber: Downstream) where Downstream.Input == Output, Downstream.Failure == Failure {
        subscriber.receive(subscription: ProgressiveSubscription(snapshot: self, downstream: subscriber))
    }
}

/// Starts the fan-out on the first demand. A partial document that finds no demand waits,
/// replaced by the next (a document so far is news only until a later one): a live
/// pipeline's states ask for `.unlimited`, so none waits there.
private final class ProgressiveSubscription<Downstream: Subscriber>: Subscription
where Downstream.Input == DocumentProgress, Downstream.Failure == ResourceError {
    private var snapshot: ProgressiveSnapshot?
    private var downstream: Downstream?
    private var demand = Subscribers.Demand.none
    private var waiting: DocumentProgress?
    private var progress: FirstDocumentProgress?
    private var work: (any Cancellable)?

    init(snapshot: ProgressiveSnapshot, downstream: Downstream) {
        self.snapshot = snapshot
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, downstream != nil else { return }
        self.demand += demand
        if let waiting {
            self.waiting = nil
            deliver(waiting)
        }
        guard let snapshot else { return }
        self.snapshot = nil
        let progress = FirstDocumentProgress(loop: snapshot.loop, window: snapshot.window) { [weak self] document in
            self?.deliver(DocumentProgress(document: document, isComplete: false))
        }
        self.progress = progress
        let resource = snapshot.resource
        let finish: (Result<JSON, ResourceError>) -> Void = { [weak self] result in self?.finished(result) }
        let work = resource.batchCall == nil
            ? resource.startFanOut(trace: snapshot.trace, progress: progress, onResult: finish)
            : resource.startBatchedFanOut(trace: snapshot.trace, progress: progress, onResult: finish)
        // The fan-out may have ended inside its start (every detail cached, a refused call).
        if downstream != nil { self.work = work }
    }

    func cancel() {
        downstream = nil
        waiting = nil
        progress?.stop()
        progress = nil
        work?.cancel()
        work = nil
    }

    private func deliver(_ step: DocumentProgress) {
        guard let downstream else { return }
        guard demand > 0 else {
            waiting = step
            return
        }
        demand -= 1
        demand += downstream.receive(step)
        if step.isComplete, waiting == nil {
            self.downstream = nil
            downstream.receive(completion: .finished)
        }
    }

    private func finished(_ result: Result<JSON, ResourceError>) {
        progress?.stop()
        progress = nil
        work = nil
        switch result {
        case .success(let document):
            waiting = nil
            deliver(DocumentProgress(document: document, isComplete: true))
        case .failure(let error):
            guard let downstream else { return }
            self.downstream = nil
            waiting = nil
            downstream.receive(completion: .failure(error))
        }
    }
}
