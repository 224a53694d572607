import OpenCombine

/// The subscription part `flatMapLatest` and `flatMapSequential` share: a serial emitter
/// subscribed to one upstream whose every element becomes an inner publisher.
///
/// It takes the upstream's one subscription and asks it for `upstreamDemand` (`.unlimited`
/// for `flatMapLatest`, `maxPublishers` for `flatMapSequential`); it finishes once the upstream
/// finished and no inner publisher is left, fails as soon as the upstream fails, and cancels
/// the upstream with the inner publishers. A subclass keeps its inner publishers as it likes
/// (the latest one; one record per element, in element order), subscribes them through
/// ``Source`` and conforms to `Subscriber` by adding `receive(_:)`:
///
///     func receive(_ input: Upstream.Output) -> Subscribers.Demand {
///         lock.lock()
///         guard acceptsElements else {
///             lock.unlock()
///             return .none
///         }
///         ... // record the new inner publisher, unlock, subscribe transform(input)
///     }
///
/// What a subclass calls on every element or output is `@inline(__always)`, as ``Queue``'s
/// methods are: unspecialised generic code then pays no call into the generic base class.
internal class FlatMapEmitter<Upstream: Publisher, Child: Publisher, Downstream: Subscriber>:
    SerialEmitter<Downstream>
    where Child.Failure == Upstream.Failure,
          Downstream.Input == Child.Output,
          Downstream.Failure == Upstream.Failure
{
    typealias Input = Upstream.Output
    typealias Failure = Upstream.Failure
    /// What a subclass, as the ``SourceOwner`` of its inner publishers, receives from them.
    typealias SourceOutput = Child.Output
    typealias SourceFailure = Child.Failure

    /// Makes the inner publisher of one element.
    final let transform: (Upstream.Output) -> Child
    /// What the upstream is asked for when it subscribes.
    private let upstreamDemand: Subscribers.Demand
    private var upstreamState = UpstreamState.awaitingSubscription

    init(
        downstream: Downstream,
        upstreamDemand: Subscribers.Demand,
        transform: @escaping (Upstream.Output) -> Child,
        description: String
    ) {
        self.upstreamDemand = upstreamDemand
        self.transform = transform
        super.init(downstream: downstream, description: description)
    }

    // MARK: What a subclass provides (called with `lock` held)

    /// Whether an inner publisher is still running or has outputs to deliver: the upstream's
    /// `.finished` ends the output only when none is.
    var hasInnerPublishers: Bool {
        false
    }

    // MARK: What a subclass calls (with `lock` held)

    /// The upstream is subscribed and the output neither completing nor terminated: an element
    /// that arrives is worth an inner publisher.
    @inline(__always)
    final var acceptsElements: Bool {
        guard !isTerminal, !isCompleting, case .subscribed = upstreamState else { return false }
        return true
    }

    /// The upstream finished: the last inner publisher to finish finishes the output.
    @inline(__always)
    final var isUpstreamFinished: Bool {
        guard case .completed = upstreamState else { return false }
        return true
    }

    /// The upstream while it is subscribed, to be asked for more elements outside the lock.
    @inline(__always)
    final var upstreamSubscription: (any Subscription)? {
        guard case let .subscribed(subscription) = upstreamState else { return nil }
        return subscription
    }

    /// What an inner publisher must be asked for so that, with what it was asked for
    /// (`requested`) and what waits to be delivered (`buffered`), downstream's demand is
    /// covered; `nil` if nothing.
    ///
    ///     guard let more = demandToRequest(requested: childDemand, buffered: queue.count) else { ... }
    ///
    /// - Precondition: `lock` is held.
    @inline(__always)
    final func demandToRequest(requested: Subscribers.Demand, buffered: Int) -> Subscribers.Demand? {
        if demand == .unlimited {
            return requested == .unlimited ? nil : .unlimited
        }
        let covered = requested + buffered
        return demand > covered ? demand - covered : nil
    }

    /// Asks an inner publisher for `more` outside the lock; a step of ``emitNext()``.
    ///
    /// - Precondition: `lock` is held, the caller is the loop.
    /// - Postcondition: `lock` is held.
    @inline(__always)
    final func request(_ more: Subscribers.Demand, from subscription: any Subscription) {
        lock.unlock()
        subscription.request(more)
        lock.lock()
    }

    // MARK: Upstream

    final func receive(subscription: any Subscription) {
        lock.lock()
        let isAccepted = !isTerminal && upstreamState.accept(subscription)
        lock.unlock()
        if isAccepted {
            subscription.request(upstreamDemand)
        } else {
            subscription.cancel()
        }
    }

    final func receive(completion: Subscribers.Completion<Upstream.Failure>) {
        lock.lock()
        guard acceptsElements else {
            lock.unlock()
            return
        }
        upstreamState = .completed
        switch completion {
        case .finished:
            if !hasInnerPublishers {
                complete(with: .finished)
            }
        case .failure:
            complete(with: completion)
        }
        drain()
    }

    /// The upstream; a subclass adds its inner publishers.
    override func takeSources() -> [any Cancellable] {
        upstreamState.takeForCancelling().map { [$0] } ?? []
    }
}
