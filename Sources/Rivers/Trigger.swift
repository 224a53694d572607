public import OpenCombine

/// A control point for pipelines: signals that fire when the trigger is activated for their id.
///
/// A pipeline takes a signal where it wants to be poked (reload, load more, retry) and
/// whoever owns the trigger activates it from outside, without any side channel.
///
///     activate(for: "reload"):   ----x--------x--
///     signal(activatedBy: "reload"): ----•--------•--
///     signal(activatedBy: "more"):   ----------------
///
///     let trigger = Trigger()
///     let groups = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) {
///         api.groups()
///     }
///     // later, from a POST /streams/{id}/triggers/reload:
///     trigger.activate(for: "reload")
///
/// Ids are any `Hashable` values, compared as `AnyHashable` (so `1` and `"1"` differ).
/// Activations are not stored: a signal that is not subscribed, or whose subscriber has no
/// outstanding demand, misses the activation (as with a `PassthroughSubject`).
public final class Trigger {
    private let activations = PassthroughSubject<AnyHashable, Never>()

    /// Creates a trigger with no signals yet.
    ///
    ///     let trigger = Trigger()
    public init() {}

    /// Returns a publisher that emits `()` each time the trigger is activated for `id`.
    ///
    ///     let loadMore = trigger.signal(activatedBy: TopicID("news"))
    public func signal<ID: Hashable>(activatedBy id: ID) -> Signal {
        Signal(activations: activations, id: AnyHashable(id))
    }

    /// Fires every signal of this trigger made for `id`.
    ///
    ///     trigger.activate(for: TopicID("news"))
    public func activate<ID: Hashable>(for id: ID) {
        activations.send(AnyHashable(id))
    }

    /// The publisher returned by ``Trigger/signal(activatedBy:)``: it emits `()` on each
    /// activation for its id and never completes.
    ///
    ///     activate(for: id): --x---x--
    ///     signal:            --•---•--
    ///
    ///     let cancellable = trigger.signal(activatedBy: "reload").sink { reload() }
    public struct Signal: Publisher {
        /// The type of the values this publisher emits.
        public typealias Output = Void
        /// This publisher never fails.
        public typealias Failure = Never

        private let activations: PassthroughSubject<AnyHashable, Never>
        private let id: AnyHashable

        fileprivate init(activations: PassthroughSubject<AnyHashable, Never>, id: AnyHashable) {
            self.activations = activations
            self.id = id
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Void, Downstream.Failure == Never
        {
            let id = self.id
            activations
                .filter { $0 == id }
                .map { _ in () }
                .receive(subscriber: subscriber)
        }
    }
}
