import OpenCombine

/// The machinery shared by `Merge` and `MergeMany`: N children interleaved into one stream.
///
/// Rules:
/// - Values are delivered in the order they arrive, never more than downstream requested.
/// - While downstream demand is bounded, each child has at most one value requested at a
///   time (`.max(1)`, asked again once its value was delivered and demand remains), so at
///   most one value per child is ever buffered. Once downstream asks for `.unlimited`, every
///   child is asked for `.unlimited` and values pass straight through.
/// - Finishes when every child finished and buffered values were delivered; the first
///   failure is forwarded at once (buffered values are dropped) and cancels the others.
/// - Cancelling cancels every child subscription exactly once.
internal final class MergeEngine<Downstream: Subscriber>: SerialEmitter<Downstream>, SourceOwner {
    typealias SourceKey = Int
    typealias SourceOutput = Downstream.Input
    typealias SourceFailure = Downstream.Failure

    private let childCount: Int
    private var subscriptions: [(any Subscription)?]
    private var states: [MergeChildState]
    private var finishedCount = 0
    private var isUnlimited = false
    private var queue = Queue<(index: Int, value: Downstream.Input)>()
    /// Children that may be asked for one value once there is demand, in asking order.
    private var idle = Queue<Int>()
    /// Children still to be asked for `.unlimited`.
    private var awaitingUnlimited = Queue<Int>()

    init(downstream: Downstream, childCount: Int, description: String) {
        self.childCount = childCount
        subscriptions = Array(repeating: nil, count: childCount)
        states = Array(repeating: .awaitingSubscription, count: childCount)
        super.init(downstream: downstream, description: description)
        if childCount == 0 {
            complete(with: .finished)
        }
    }

    /// Subscribes to `child`, the child at `index`, unless the engine already terminated.
    func subscribe<Child: Publisher>(_ child: Child, at index: Int)
        where Child.Output == Downstream.Input, Child.Failure == Downstream.Failure
    {
        if acceptsSources {
            child.subscribe(Source(self, key: index))
        }
    }

    // MARK: Children

    func source(_ index: Int, received subscription: any Subscription) {
        lock.lock()
        guard !isTerminal, !isCompleting, subscriptions[index] == nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        subscriptions[index] = subscription
        states[index] = .idle
        if isUnlimited {
            awaitingUnlimited.append(index)
        } else {
            idle.append(index)
        }
        drain()
    }

    func source(_ index: Int, received value: Downstream.Input) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        if states[index] == .requested {
            states[index] = .queued
        }
        queue.append((index, value))
        drain()
    }

    func source(_ index: Int, received completion: Subscribers.Completion<Downstream.Failure>) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        subscriptions[index] = nil
        states[index] = .finished
        finishedCount += 1
        switch completion {
        case .failure:
            complete(with: completion)
        case .finished:
            if finishedCount == childCount {
                complete(with: .finished)
            }
        }
        drain()
    }

    // MARK: Serial emission

    /// Delivers one buffered value, or asks one child for more.
    override func emitNext() -> Bool {
        if demand == .unlimited && !isUnlimited {
            switchToUnlimited()
        }
        if demand > 0, !queue.isEmpty {
            let (index, value) = queue.removeFirst()
            if states[index] == .queued {
                states[index] = .idle
                idle.append(index)
            }
            deliver(value)
            return true
        }
        if isUnlimited, !awaitingUnlimited.isEmpty {
            let index = awaitingUnlimited.removeFirst()
            if let subscription = subscriptions[index], states[index] != .unlimited {
                states[index] = .unlimited
                lock.unlock()
                subscription.request(.unlimited)
                lock.lock()
            }
            return true
        }
        if !isUnlimited, demand > 0, !idle.isEmpty {
            let index = idle.removeFirst()
            if states[index] == .idle, let subscription = subscriptions[index] {
                states[index] = .requested
                lock.unlock()
                subscription.request(.max(1))
                lock.lock()
            }
            return true
        }
        return false
    }

    override var isDrained: Bool {
        queue.isEmpty
    }

    override func takeSources() -> [any Cancellable] {
        let taken = subscriptions.compactMap { $0 }
        subscriptions = Array(repeating: nil, count: childCount)
        queue.removeAll()
        return taken
    }

    // MARK: Private

    /// - Precondition: `lock` is held.
    private func switchToUnlimited() {
        isUnlimited = true
        idle.removeAll()
        for index in 0..<childCount where subscriptions[index] != nil && states[index] != .unlimited {
            awaitingUnlimited.append(index)
        }
    }
}

/// Where one child of a merge stands in the request/deliver cycle (non-generic on purpose:
/// see `UpstreamState`).
private enum MergeChildState {
    case awaitingSubscription
    /// Subscribed, nothing requested, nothing buffered.
    case idle
    /// One value requested and not yet received.
    case requested
    /// Its value waits in `queue` for downstream demand.
    case queued
    /// Asked for `.unlimited`.
    case unlimited
    case finished
}
