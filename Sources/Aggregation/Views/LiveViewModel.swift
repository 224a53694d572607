public import OpenCombine

/// What one live stream shows and what its client may poke: a view model that lives on the
/// server, owned by one client connection (or shared, for resources everyone watches).
///
/// The client reaches it over HTTP: `POST /streams/{id}/triggers/{name}?arg=…` activates a
/// trigger, `PUT /streams/{id}/inputs/{name}` sets an input. Control enters the pipeline
/// through signals and inputs, never through side channels; ``states`` is the single source
/// of truth for what the client sees.
public protocol LiveViewModel: AnyObject {
    /// The states to stream; subscribing starts the pipeline, cancelling stops it.
    var states: AnyPublisher<LiveState, Never> { get }
    /// Names the client may activate, announced in the stream's first event.
    var triggers: [String] { get }
    /// Names the client may set, announced in the stream's first event.
    var inputs: [String] { get }
    /// Activates `trigger` with the request's query parameters as arguments.
    func activate(_ trigger: String, arguments: [String: String]) throws(ControlError)
    /// Sets `input` to `value` (the request body as text).
    func set(_ input: String, to value: String) throws(ControlError)
}

extension LiveViewModel {
    public var inputs: [String] { [] }

    /// This view as `fields` show its documents (``FieldSelection``): itself when they keep
    /// every member. For a view of one stream's own (`rows`, `search`); the streams of a shared
    /// pipeline share one projection per worker and fields instead.
    public func keeping(_ fields: FieldSelection) -> any LiveViewModel {
        fields.keepsEverything ? self : ProjectedView(self, keeping: fields)
    }

    public func set(_ input: String, to value: String) throws(ControlError) {
        throw .unknownInput(input)
    }
}

/// Why a trigger or input of a stream refused a client's request.
public enum ControlError: Error, Equatable, Sendable {
    case unknownTrigger(String)
    case unknownInput(String)
    /// The name exists but an argument or value is not acceptable: the message says why.
    case invalidArgument(String)
    /// The request is right but comes too early for the stream's state (a `loadMore` of a topic
    /// whose first page is not in yet, as after a `reload`): asked again later, it may pass.
    case notReady(String)
}

/// The view of a resource everyone watches: the shared live pipeline (``LiveSource``), whose
/// `reload` trigger refreshes it for every subscriber.
public final class SharedLiveView: LiveViewModel {
    private let live: any LiveSource

    public init(_ live: any LiveSource) {
        self.live = live
    }

    /// Its triggers, whatever the resource (the API description lists them).
    public static let triggerNames = ["reload"]

    public var states: AnyPublisher<LiveState, Never> { live.states }
    public var triggers: [String] { Self.triggerNames }

    public func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
        guard trigger == "reload" else { throw .unknownTrigger(trigger) }
        live.reload()
    }
}

/// A view whose documents show only the members its stream asked for: its states projected,
/// and a state whose projection did not change not sent again (a page that shows names is not
/// woken when only a count changed). Its triggers and inputs are the view's own.
final class ProjectedView: LiveViewModel {
    private let view: any LiveViewModel
    let states: AnyPublisher<LiveState, Never>

    init(_ view: any LiveViewModel, keeping fields: FieldSelection) {
        self.view = view
        states = view.states.map { fields.projecting($0) }.removeDuplicates().eraseToAnyPublisher()
    }

    var triggers: [String] { view.triggers }
    var inputs: [String] { view.inputs }

    func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
        try view.activate(trigger, arguments: arguments)
    }

    func set(_ input: String, to value: String) throws(ControlError) {
        try view.set(input, to: value)
    }
}
