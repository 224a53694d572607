public import OpenCombine

/// A settable value that is also a publisher of its values: the current value first, then
/// every change.
///
/// `Input` is a small struct; copies are handles to the same value, so a stream registry can
/// hold one copy and a pipeline another. Setting `value` publishes the new value to every
/// subscriber (equal values included: add `removeDuplicates()` where that matters).
///
///     value = "sw", "swift":  --------s--------
///     input:                 -"sw"---"swift"---    (a subscriber first gets the current value)
///
///     let query = Input("")
///     let results = query
///         .debounce(for: .milliseconds(300), scheduler: loop)
///         .removeDuplicates()
///         .flatMapLatest { api.search($0) }
///     // later, from PUT /streams/{id}/inputs/q:
///     query.value = "swift"
///
/// Demand: a subscriber without outstanding demand does not queue changes; its next request
/// receives the latest value (as `CurrentValueSubject` does).
public struct Input<Value>: Publisher {
    /// The type of the values this publisher emits.
    public typealias Output = Value
    /// This publisher never fails.
    public typealias Failure = Never

    private let subject: CurrentValueSubject<Value, Never>

    /// Creates an input holding `value`.
    ///
    ///     let page = Input(1)
    public init(_ value: Value) {
        subject = CurrentValueSubject(value)
    }

    /// The current value; setting it publishes the new value to every subscriber.
    ///
    ///     page.value += 1
    public var value: Value {
        get { subject.value }
        nonmutating set { subject.value = newValue }
    }

    /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
    ///
    ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
    public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Value, Downstream.Failure == Never
    {
        subject.receive(subscriber: subscriber)
    }
}
