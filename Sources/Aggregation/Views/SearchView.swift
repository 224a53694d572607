public import EventLoop
public import HTTPCore
public import OpenCombine
import Rivers

/// One client's live search session: its input `q` (named after the resource's query
/// parameter) searched after it stayed unchanged for the debounce interval, repeated queries
/// skipped, and a search still running when the query changes cancelled (the upstream sees
/// its connection close). Each state names the query it answers (``LiveState/inputs``), so a
/// client can label results with their query. Every search is a span of `trace`, the trace of
/// the request that opened the stream.
///
/// ```
/// q: ──"sw"─"swi"─"swift"──────────▶ debounce ─▶ removeDuplicates ─▶ flatMapLatest { search } ─▶ scan(LiveState)
///                                    (the first value is searched at once)
/// ```
public final class SearchView: LiveViewModel {
    /// Longest query accepted from a client, in Unicode code points: what JSON Schema's
    /// `maxLength` counts, so the limit the API description states is the one applied.
    public static let maximumQueryLength = 256

    private let query: Input<String>
    /// The input's name: the resource's query parameter (`definition.parameter`), e.g. `q`.
    private let inputName: String
    public private(set) var states: AnyPublisher<LiveState, Never>

    public init(_ resource: SearchResource, initialQuery: String, scheduler: EventLoopScheduler, trace: TraceContext) {
        let query = Input(initialQuery)
        self.query = query
        let inputName = resource.definition.parameter
        self.inputName = inputName
        let debounce = EventLoopScheduler.SchedulerTimeType.Stride(resource.definition.debounce)
        states = query.prefix(1)
            .merge(with: query.dropFirst().debounce(for: debounce, scheduler: scheduler))
            .removeDuplicates()
            .flatMapLatest { text in resource.results(for: text, trace: trace).asResult().map { (query: text, result: $0) } }
            .scan(LiveState()) { state, answer in state.applying(answer.result, inputs: [inputName: answer.query]) }
            .removeDuplicates()
            .eraseToAnyPublisher()
    }

    public var triggers: [String] { [] }
    public var inputs: [String] { [inputName] }

    public func activate(_ trigger: String, arguments: [String: String]) throws(ControlError) {
        throw .unknownTrigger(trigger)
    }

    public func set(_ input: String, to value: String) throws(ControlError) {
        guard input == inputName else { throw .unknownInput(input) }
        guard value.unicodeScalars.count <= Self.maximumQueryLength else {
            throw .invalidArgument("\(inputName) is longer than \(Self.maximumQueryLength) characters")
        }
        query.value = value
    }
}
