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
/// Subclasses store the children's values (with `lock` held, in the closure they give
/// `child(_:receivedValue:)`, themselves or through a ``LatestStore`` per child type) and build
/// the combination in `snapshot()`.
internal class LatestEngine<Downstream: Subscriber>: SerialEmitter<Downstream> {
    private let childCount: Int
    private var subscriptions: [(any Subscription)?]
    private var hasValue: [Bool]
    private var filledCount = 0
    private var finishedCount = 0
    private var isDirty: Bool

    init(downstream: Downstream, childCount: Int, description: String) {
        self.childCount = childCount
        subscriptions = Array(repeating: nil, count: childCount)
        hasValue = Array(repeating: false, count: childCount)
        // With no children the (empty) combination exists at once, and nothing follows it.
        isDirty = childCount == 0
        super.init(downstream: downstream, description: description)
        if childCount == 0 {
            complete(with: .finished)
        }
    }

    /// Builds the combined value. Called with `lock` held, only once every child has a value.
    func snapshot() -> Downstream.Input {
        fatalError("LatestEngine.snapshot() must be overridden")
    }

    /// Subscribes to `child`, the child at `index`, whose events go to `owner` (which stores
    /// its values and passes the rest on to the engine), unless the engine already terminated
    /// (cancelled, or failed while subscribing an earlier child).
    final func subscribe<Child: Publisher, Owner: SourceOwner>(_ child: Child, at index: Int, through owner: Owner)
        where Owner.SourceKey == Int, Owner.SourceOutput == Child.Output, Owner.SourceFailure == Child.Failure
    {
        if acceptsSources {
            child.subscribe(Source(owner, key: index))
        }
    }

    // MARK: Children

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
            complete(with: completion)
        case .finished:
            finishedCount += 1
            if !hasValue[index] {
                // No combination can ever exist: whatever the others sent is moot.
                isDirty = false
                complete(with: .finished)
            } else if finishedCount == childCount {
                complete(with: .finished)
            }
        }
        drain()
    }

    // MARK: Serial emission

    override final func emitNext() -> Bool {
        guard isDirty, filledCount == childCount, demand > 0 else { return false }
        isDirty = false
        deliver(snapshot())
        return true
    }

    override final var isDrained: Bool {
        !isDirty
    }

    override final func takeSources() -> [any Cancellable] {
        let taken = subscriptions.compactMap { $0 }
        subscriptions = Array(repeating: nil, count: childCount)
        return taken
    }
}

/// How a ``LatestEngine`` keeps the values of its children of one output type, when they are
/// not all of one type: each child's ``Source`` hands its events here, keyed by the child's
/// index, and `store` writes the value into the engine (called with the engine's lock held).
///
///     subscribe(a, at: 0, through: LatestStore(engine: self) { [unowned self] in self.a = $1 })
internal final class LatestStore<Value, Downstream: Subscriber>: SourceOwner {
    typealias SourceKey = Int
    typealias SourceOutput = Value
    typealias SourceFailure = Downstream.Failure

    private let engine: LatestEngine<Downstream>
    private let store: (Int, Value) -> Void

    init(engine: LatestEngine<Downstream>, store: @escaping (Int, Value) -> Void) {
        self.engine = engine
        self.store = store
    }

    func source(_ index: Int, received subscription: any Subscription) {
        engine.child(index, received: subscription)
    }

    func source(_ index: Int, received input: Value) {
        engine.child(index) { store(index, input) }
    }

    func source(_ index: Int, received completion: Subscribers.Completion<Downstream.Failure>) {
        engine.child(index, received: completion)
    }
}
