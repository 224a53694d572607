import Aggregation
import OpenCombine

/// One resource inside an ``EventStream``: the subscription to its view model's states, with
/// the id its client pokes it by (`/streams/{id}/…`) and what of it the client already has.
/// A resource's own stream (`GET /groups`) has one feed; `GET /events` has one per resource,
/// all writing into the same connection. Loop-confined.
///
/// It decides what to send and leaves how to the stream: a new document only when it
/// changed (or after an error, so the client knows it is current again), an error only when
/// it is a new one; on `GET /events`, which names the input values each answers, also when
/// those changed (a search for "swift" that finds what "swi" found is still news: the client
/// learns that its results are now "swift"'s). Back pressure: after each write it asks for
/// the next state only once the socket has taken the stream's output (at once, or later:
/// ``drained()``), so a slow reader gets the latest state when it catches up, never a backlog.
///
/// A state holding a progressive first document's partial document (``LiveState/pending``)
/// shows only on a stream that asked for `progressive=true`; others wait for the complete one.
///
/// With `updates=patch` it keeps the document the client has, and a new one goes as a patch
/// from it (``EventStream/send(_:from:answering:of:)``): from the last one sent, or the one
/// the client's `Last-Event-ID` names when that is the current one. A reader that skipped
/// versions gets the patch from the version it has, never one from a version it has not.
final class EventFeed: Subscriber {
    typealias Input = LiveState
    typealias Failure = Never

    let id: StreamID
    /// The resource it shows, e.g. `groups`, and the parameter values it was opened with.
    let resource: String
    let parameters: ParameterValues
    /// What it shows and what its client may poke; it lives as long as the feed.
    let view: any LiveViewModel
    /// How patches of its documents are made (which members are its items' ids).
    let diff: JSONDiff
    /// The version of the document the client has (sent, or named by its `Last-Event-ID`).
    private(set) var sentVersion: String?
    /// That document, when the stream sends patches and the feed has seen it: the next patch
    /// is made from it. Shared with the state it came in (no copy).
    private var sentSnapshot: Snapshot?
    private var sentError: ResourceError?
    /// The input values the client knows its document or error answers: those it was last
    /// told. Nil before the first state, which answers the values the client's request named:
    /// it knows them, so a reconnect still skips a document it has.
    private var knownInputs: [String: String]?
    /// A state was written and the next is requested only once the socket took it.
    private var awaitingDrain = false
    private var subscription: (any Subscription)?
    /// The stream owns its feeds and cancels them when it closes.
    private unowned let stream: EventStream

    init(id: StreamID, resource: StreamedResource, clientHas version: String?, stream: EventStream) {
        self.id = id
        self.resource = resource.name
        parameters = resource.parameters
        view = resource.view
        diff = resource.diff
        self.stream = stream
        sentVersion = version
    }

    /// Starts following the view's states (the pipeline starts, or a shared one is joined).
    func start() {
        view.states.subscribe(self)
    }

    /// Stops following them: the view's pipeline, and every upstream call it has in flight,
    /// is cancelled unless other streams share it.
    func cancel() {
        subscription?.cancel()
        subscription = nil
    }

    /// The stream's socket took everything written: the next state may come.
    func drained() {
        guard awaitingDrain else { return }
        awaitingDrain = false
        subscription?.request(.max(1))
    }

    // MARK: - Subscriber

    func receive(subscription: any Subscription) {
        self.subscription = subscription
        subscription.request(.max(1))
    }

    func receive(_ state: LiveState) -> Subscribers.Demand {
        let inputsChanged = stream.framing.namesInputs && knownInputs.map { $0 != state.inputs } ?? false
        knownInputs = state.inputs
        let patches = stream.updates == .patches
        // A progressive first document's partial states are for streams that asked for them.
        let shown = state.pending && !stream.progressive ? nil : state.snapshot
        // The client's Last-Event-ID names the current document: the next patch goes from it.
        if patches, sentSnapshot == nil, let snapshot = shown, snapshot.version == sentVersion { sentSnapshot = snapshot }
        if let snapshot = shown, state.error == nil, snapshot.version != sentVersion || sentError != nil || inputsChanged {
            let base = sentSnapshot
            sentVersion = snapshot.version
            if patches { sentSnapshot = snapshot }
            sentError = nil
            return demand(afterWriting: stream.send(snapshot, from: base, answering: state.inputs, of: self))
        }
        if let error = state.error, error != sentError || inputsChanged {
            sentError = error
            return demand(afterWriting: stream.send(error, answering: state.inputs, of: self))
        }
        return .max(1)
    }

    /// The next state at once when the socket took the write at once (most writes: one
    /// system call, no loop turn), else once it has (``drained()``).
    private func demand(afterWriting taken: Bool) -> Subscribers.Demand {
        awaitingDrain = !taken
        return taken ? .max(1) : .none
    }

    func receive(completion: Subscribers.Completion<Never>) {
        subscription = nil
        stream.finish()
    }
}
