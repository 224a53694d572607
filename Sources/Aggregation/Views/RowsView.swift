public import HTTPCore
public import OpenCombine
import Rivers

/// One client's live home page: rows of a ``PagedListResource``, each loading its next page
/// when the client activates `loadMore` with `topic=<id>`, and all of it starting over on
/// `reload`. Owned by the client's stream: it goes when the connection closes. Its upstream
/// calls, reloads and later pages included, are spans of `trace`, the opening request's.
///
/// ```
/// reload ──▶ PublishAndRepeat { rows(loadingMoreOn: trigger).asResult() } ─▶ scan(LiveState) ─▶ removeDuplicates
/// loadMore(topic=t2) ──▶ trigger ──▶ t2's paginated publisher loads its next page
/// ```
public final class RowsView: LiveViewModel {
    private let trigger = Trigger()
    private let argument: String
    /// The ids of the current rows, so a `loadMore` for an unknown id is refused (by bytes:
    /// an id canonically equivalent to a row's is another id).
    private var knownIDs: Set<ExactText> = []
    /// The rows that have their first page: before it, a `loadMore` would be lost (the row
    /// waits for it only once a page is in), so it is refused instead.
    private var loadedIDs: Set<ExactText> = []
    public private(set) var states: AnyPublisher<LiveState, Never>

    public init(_ resource: PagedListResource, argument: String = "topic", trace: TraceContext) {
        self.argument = argument
        let trigger = self.trigger
        var listed: (Set<String>) -> Void = { _ in }
        var loaded: (String) -> Void = { _ in }
        states = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal(activatedBy: Control.reload)) {
            resource.rows(loadingMoreOn: trigger, trace: trace, knownIDs: { listed($0) }, pageLoaded: { loaded($0) }).asResult()
        }
        .scan(LiveState()) { state, result in state.applying(result) }
        .removeDuplicates()
        .eraseToAnyPublisher()
        listed = { [weak self] ids in
            self?.knownIDs = Set(ids.map(ExactText.init))
            self?.loadedIDs = []
        }
        loaded = { [weak self] id in self?.loadedIDs.insert(ExactText(id)) }
    }

    /// Its triggers, whatever the resource (the API description lists them).
    public static let triggerNames = ["reload", "loadMore"]

    public var triggers: [String] { Self.triggerNames }

    public func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
        switch trigger {
        case "reload":
            self.trigger.activate(for: Control.reload)
        case "loadMore":
            guard let id = arguments[argument] else { throw .invalidArgument("loadMore needs ?\(argument)=<id>") }
            guard knownIDs.contains(ExactText(id)) else { throw .invalidArgument("no \(argument) \"\(id)\" in this stream") }
            guard loadedIDs.contains(ExactText(id)) else { throw .notReady("\(argument) \"\(id)\" has not loaded its first page yet") }
            self.trigger.activate(for: PagedListResource.LoadMore(id: id))
        default:
            throw .unknownTrigger(trigger)
        }
    }

    private enum Control: Hashable {
        case reload
    }
}
