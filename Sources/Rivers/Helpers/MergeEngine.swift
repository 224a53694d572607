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
internal final class MergeEngine<Downstream: Subscriber>: Subscription, CustomStringConvertible {
    private let lock = Lock()
    private let downstream: Downstream
    private let childCount: Int
    private var isTerminal = false
    private var subscriptions: [(any Subscription)?]
    private var phases: [MergePhase]
    private var finishedCount = 0
    private var demand = Subscribers.Demand.none
    private var isUnlimited = false
    private var queue = Queue<(index: Int, value: Downstream.Input)>()
    /// Children that may be asked for one value once there is demand, in asking order.
    private var idle = Queue<Int>()
    /// Children still to be asked for `.unlimited`.
    private var awaitingUnlimited = Queue<Int>()
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
        phases = Array(repeating: .awaitingSubscription, count: childCount)
        if childCount == 0 {
            // Property observers do not run in an initializer: set both.
            pendingCompletion = .finished
            isCompleting = true
        }
    }

    /// Subscribes `side` to `child` unless the engine already terminated.
    func subscribe<Child: Publisher>(_ child: Child, with side: MergeSide<Child, Downstream>) {
        lock.lock()
        let isActive = !isTerminal && !isCompleting
        lock.unlock()
        if isActive {
            child.subscribe(side)
        }
    }

    /// Delivers what is already decided (with no children: the completion).
    func start() {
        lock.lock()
        drain()
    }

    // MARK: - Children

    func child(_ index: Int, received subscription: any Subscription) {
        lock.lock()
        guard !isTerminal, !isCompleting, subscriptions[index] == nil else {
            lock.unlock()
            subscription.cancel()
            return
        }
        subscriptions[index] = subscription
        phases[index] = .idle
        if isUnlimited {
            awaitingUnlimited.append(index)
        } else {
            idle.append(index)
        }
        drain()
    }

    func child(_ index: Int, received value: Downstream.Input) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        if phases[index] == .requested {
            phases[index] = .queued
        }
        queue.append((index, value))
        drain()
    }

    func child(_ index: Int, received completion: Subscribers.Completion<Downstream.Failure>) {
        lock.lock()
        guard !isTerminal, !isCompleting else {
            lock.unlock()
            return
        }
        subscriptions[index] = nil
        phases[index] = .finished
        finishedCount += 1
        switch completion {
        case .failure:
            queue.removeAll()
            pendingCompletion = completion
        case .finished:
            if finishedCount == childCount {
                pendingCompletion = .finished
            }
        }
        drain()
    }

    // MARK: - Subscription

    func request(_ demand: Subscribers.Demand) {
        lock.lock()
        guard !isTerminal else {
            lock.unlock()
            return
        }
        self.demand += demand
        drain()
    }

    func cancel() {
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

    /// Delivers buffered values, asks children for more and completes, one call out at a time.
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
            if demand == .unlimited && !isUnlimited {
                switchToUnlimited()
            }
            if isCompleting, queue.isEmpty {
                isEmitting = false
                complete()
                return
            }
            if demand > 0, !queue.isEmpty {
                let (index, value) = queue.removeFirst()
                demand -= 1
                if phases[index] == .queued {
                    phases[index] = .idle
                    idle.append(index)
                }
                lock.unlock()
                let additionalDemand = downstream.receive(value)
                lock.lock()
                demand += additionalDemand
                continue
            }
            if isUnlimited, !awaitingUnlimited.isEmpty {
                let index = awaitingUnlimited.removeFirst()
                guard let subscription = subscriptions[index], phases[index] != .unlimited else {
                    continue
                }
                phases[index] = .unlimited
                lock.unlock()
                subscription.request(.unlimited)
                lock.lock()
                continue
            }
            if !isUnlimited, demand > 0, !idle.isEmpty {
                let index = idle.removeFirst()
                guard phases[index] == .idle, let subscription = subscriptions[index] else {
                    continue
                }
                phases[index] = .requested
                lock.unlock()
                subscription.request(.max(1))
                lock.lock()
                continue
            }
            break
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
    private func switchToUnlimited() {
        isUnlimited = true
        idle.removeAll()
        for index in 0..<childCount where subscriptions[index] != nil && phases[index] != .unlimited {
            awaitingUnlimited.append(index)
        }
    }

    /// - Precondition: `lock` is held.
    private func takeSubscriptions() -> [any Subscription] {
        let taken = subscriptions.compactMap { $0 }
        subscriptions = Array(repeating: nil, count: childCount)
        return taken
    }
}

/// Subscribes a merge engine to one child publisher.
internal struct MergeSide<Upstream: Publisher, Downstream: Subscriber>: Subscriber
    where Upstream.Output == Downstream.Input, Upstream.Failure == Downstream.Failure
{
    typealias Input = Upstream.Output
    typealias Failure = Upstream.Failure

    let combineIdentifier = CombineIdentifier()
    private let engine: MergeEngine<Downstream>
    private let index: Int

    init(engine: MergeEngine<Downstream>, index: Int) {
        self.engine = engine
        self.index = index
    }

    func receive(subscription: any Subscription) {
        engine.child(index, received: subscription)
    }

    func receive(_ input: Upstream.Output) -> Subscribers.Demand {
        engine.child(index, received: input)
        return .none
    }

    func receive(completion: Subscribers.Completion<Upstream.Failure>) {
        engine.child(index, received: completion)
    }
}

/// Where one child of a merge stands in the request/deliver cycle (non-generic on purpose:
/// see `UpstreamState`).
private enum MergePhase {
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
