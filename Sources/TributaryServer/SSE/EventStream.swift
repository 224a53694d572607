import Aggregation
import Libevent
import OpenCombine

/// One client's server-sent event stream of a live resource: it subscribes to the shared
/// states and writes what changed, with real back pressure: it asks for the next state only
/// when the socket has taken the previous one, so a slow reader gets the latest state when it
/// catches up, never a backlog. Loop-confined.
///
/// What the client sees:
/// ```
/// retry: 2000
/// event: stream      data: {"id":"<32 hex>","triggers":["reload"],"inputs":[]}   (the view's names)
/// event: snapshot    id: <version>   data: <document>      (only when the document changed)
/// event: error       data: {"error":{"code","message"}}     (a refresh failed; the stream stays)
/// : heartbeat                                               (every sse.heartbeat)
/// ```
///
/// A `Last-Event-ID` equal to the current version skips resending that snapshot. After an
/// error, the next good refresh sends the snapshot again even if it did not change, so the
/// client knows it is current.
final class EventStream: Subscriber {
    typealias Input = LiveState
    typealias Failure = Never

    let id: StreamID
    let request: ServerRequest
    /// The resource it shows, e.g. `groups`.
    let resource: String
    /// What it shows and what its client may poke; it lives as long as the stream.
    let view: any LiveViewModel
    private var subscription: (any Subscription)?
    private var sentVersion: String?
    private var sentError: ResourceError?
    /// A state was written and the next is requested only once the socket took it.
    private var awaitingDrain = false
    private let frames: EventFrameCache
    private let onClose: (EventStream) -> Void

    init(
        id: StreamID, request: ServerRequest, resource: String, view: any LiveViewModel, frames: EventFrameCache,
        onClose: @escaping (EventStream) -> Void
    ) {
        self.id = id
        self.request = request
        self.resource = resource
        self.view = view
        self.frames = frames
        self.onClose = onClose
        sentVersion = request.header("Last-Event-ID")
    }

    /// Sends the headers and the preamble, then follows the view's states.
    func start(retry: Duration) {
        request.startStream(status: 200, headers: EventStreamFormat.headers)
        let announcement = JSON.object([
            ("id", .string(id.description)),
            ("triggers", .array(view.triggers.map(JSON.string))),
            ("inputs", .array(view.inputs.map(JSON.string))),
        ])
        request.write(EventStreamFormat.retry(retry) + EventStreamFormat.event("stream", data: announcement.serialized))
        request.onDrained = { [unowned self] in drained() }
        request.onDisconnect = { [unowned self] in close() }
        // What tells a client that only half-closed (it takes a comment) from one that is gone.
        request.livenessProbe = EventStreamFormat.heartbeat
        view.states.subscribe(self)
    }

    /// Writes a heartbeat comment unless output is still waiting (a stuck client gets no more).
    func heartbeat() {
        guard request.pendingOutputBytes == 0 else { return }
        request.write(EventStreamFormat.heartbeat)
    }

    /// Ends the stream from the server side (shutdown).
    func finish() {
        subscription?.cancel()
        subscription = nil
        request.endStream()
        onClose(self)
    }

    // MARK: - Subscriber

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        subscription.request(.max(1))
    }

    func receive(_ state: LiveState) -> Subscribers.Demand {
        if let snapshot = state.snapshot, state.error == nil, snapshot.version != sentVersion || sentError != nil {
            sentVersion = snapshot.version
            sentError = nil
            awaitingDrain = true
            request.write(frames.snapshotFrame(snapshot))
            return .none
        }
        if let error = state.error, error != sentError {
            sentError = error
            awaitingDrain = true
            request.write(EventStreamFormat.event("error", data: Array(error.httpError.json.utf8)))
            return .none
        }
        return .max(1)
    }

    func receive(completion: Subscribers.Completion<Never>) {
        finish()
    }

    // MARK: - Socket events

    private func drained() {
        guard awaitingDrain else { return }
        awaitingDrain = false
        subscription?.request(.max(1))
    }

    private func close() {
        subscription?.cancel()
        subscription = nil
        onClose(self)
    }
}
