import OpenCombine

/// The machinery shared by `CombineLatest`, `CombineLatest3`, `CombineLatest4` and
/// `AccumulateLatestMany`: N children, the latest value of each, one combined output.
///
/// Rules (identical for every "latest" operator):
/// - Every child is asked for `.unlimited` values and only its latest value is kept, so a
///   child that is a subject never drops a value because downstream was slow.
/// - Nothing is emitted until every child has emitted once. Then every update marks the
///   combination dirty; a dirty combination is emitted when downstream has demand. Updates that
///   arrive while downstream has no demand are coalesced: downstream gets the latest
///   combination on its next request, never more values than it asked for.
/// - The output finishes when every child finished (after delivering a pending combination),
///   or at once when a child finishes without ever emitting (no combination can exist).
/// - The first failure wins: the other children are cancelled and the failure is sent.
/// - Cancelling cancels every child subscription exactly once.
///
/// Subclasses store the children's values (from `LatestSide` closures, with `lock` held) and
/// build the combination in `snapshot()`.
internal class LatestEngine<Downstream: Subscriber>: Subscription, CustomStringConvertible {
    /// Guards all state of the engine and of its subclass.
    final let lock = Lock()

    private let downstream: Downstream
    private let childCount: Int
    private var isTerminal = false
    private var subscriptions: [(any Subscription)?]
    private var hasValue: [Bool]
    private var filledCount = 0
    private var finishedCount = 0
    private var demand = Subscribers.Demand.none
    private var isDirty: Bool
    private var pendingCompletion: Subscribers.Completion<Downstream.Failure>? {
        didSet { isCompleting = pendingCompletion != nil }
    }
    /// Mirrors `pendingCompletion != nil` without touching the generic optional on hot
    /// paths (unspecialised generic code pays a metadata lookup for it).
    private var isCompleting = false
    private var isEmitting = false

    let description: String

    init(downstream: Downstream, childCount: Int, description: String) {
        self.downstream = downstream
        self.childCount = childCount
        self.description = description
        subscriptions = Array(repeating: nil, count: childCount)
        hasValue = Array(repeating: false, count: childCount)
        // With no children the (empty) combination exists at once, and nothing follows it.
        isDirty = childCount == 0
        if childCount == 0 {
            // Property observers do not run in an initializer: set both.
            pendingCompletion = .finished
            isCompleting = true
        }
    }

    /// Builds the combined value. Called with `lock` held, only once every child has a value.
    func snapshot() -> Downstream.Input {
        fatalError("LatestEngine.snapshot() must be overridden")
    }

    /// Subscribes `side` to `child` unless the engine already terminated (cancelled, or
    /// failed while subscribing an earlier child).
    final func subscribe<Child: Publisher>(
        _ child: Child,
        with side: LatestSide<Child, Downstream>
    ) {
        lock.lock()
        let isActive = !isTerminal && !isCompleting
        lock.unlock()
        if isActive {
            child.subscribe(side)
        }
    }

    // MARK: - Children

    final func child(_ index: Int, received subscription: any Subscription) {
        lock.lock()
        guard !isTerminal, !isCompleting, subscriptions[index] == nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        subscriptions[index] = subscription
        lock.unlock()
        subscription.request(.unlimited)
    }

    final func child(_ index: Int, receivedValue store: () -> Void) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        store()
        if !hasValue[index] {
            hasValue[index] = true
            filledCount += 1
        }
        isDirty = true
        drain()
    }

    final func child(
        _ index: Int,
        received completion: Subscribers.Completion<Downstream.Failure>
    ) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        subscriptions[index] = nil
        switch completion {
        case .failure:
            isDirty = false
            pendingCompletion = completion
        case .finished:
            finishedCount += 1
            if !hasValue[index] {
                // No combination can ever exist: whatever the others sent is moot.
                isDirty = false
                pendingCompletion = .finished
            } else if finishedCount == childCount {
                pendingCompletion = .finished
            }
        }
        drain()
    }

    // MARK: - Subscription

    final func request(_ demand: Subscribers.Demand) {
        lock.lock()
        guard !isTerminal else {
            lock.unlock()
            return
        }
        self.demand += demand
        drain()
    }

    final func cancel() {
        lock.lock()
        guard !isTerminal else {
            lock.unlock()
            return
        }
        isTerminal = true
        let subscriptions = takeSubscriptions()
        lock.unlock()
        for subscription in subscriptions {
            subscription.cancel()
        }
    }

    // MARK: - Private

    /// Delivers what can be delivered, one call out at a time.
    ///
    /// - Precondition: `lock` is held.
    /// - Postcondition: `lock` is released.
    private func drain() {
        if isEmitting {
            lock.unlock()
            return
        }
        isEmitting = true
        while !isTerminal {
            if isCompleting, !isDirty {
                isEmitting = false
                complete()
                return
            }
            guard isDirty, filledCount == childCount, demand > 0 else { break }
            isDirty = false
            demand -= 1
            let value = snapshot()
            lock.unlock()
            let additionalDemand = downstream.receive(value)
            lock.lock()
            demand += additionalDemand
        }
        isEmitting = false
        lock.unlock()
    }

    /// Terminates: cancels what is still subscribed, then sends the pending completion.
    /// Kept out of `drain()` so its hot loop never touches the generic completion.
    ///
    /// - Precondition: `lock` is held and `pendingCompletion` is set.
    /// - Postcondition: `lock` is released.
    @inline(never)
    private func complete() {
        isTerminal = true
        let completion = pendingCompletion!
        let subscriptions = takeSubscriptions()
        lock.unlock()
        for subscription in subscriptions {
            subscription.cancel()
        }
        downstream.receive(completion: completion)
    }

    /// - Precondition: `lock` is held.
    private func takeSubscriptions() -> [any Subscription] {
        let taken = subscriptions.compactMap { $0 }
        subscriptions = Array(repeating: nil, count: childCount)
        return taken
    }
}

/// Subscribes an engine to one child publisher and stores that child's latest value.
internal final class LatestSide<Upstream: Publisher, Downstream: Subscriber>: Subscriber
    where Upstream.Failure == Downstream.Failure
{
    typealias Input = Upstream.Output
    typealias Failure = Upstream.Failure

    private let engine: LatestEngine<Downstream>
    private let index: Int
    private let store: (Int, Upstream.Output) -> Void

    /// - Parameter store: writes a value into the engine's storage; called with the engine's
    ///   lock held.
    init(
        engine: LatestEngine<Downstream>,
        index: Int,
        store: @escaping (Int, Upstream.Output) -> Void
    ) {
        self.engine = engine
        self.index = index
        self.store = store
    }

    func receive(subscription: any Subscription) {
        engine.child(index, received: subscription)
    }

    func receive(_ input: Upstream.Output) -> Subscribers.Demand {
        engine.child(index) { store(index, input) }
        return .none
    }

    func receive(completion: Subscribers.Completion<Upstream.Failure>) {
        engine.child(index, received: completion)
    }
}
