import Dispatch
import Foundation
import OpenCombine
import Synchronization

/// The errors the tests' publishers fail with.
enum TestError: Error, Equatable {
    case boom
    case other
}

/// Counts how many publishers are running at once (subscribed and not yet completed or
/// cancelled), to check concurrency limits.
final class ConcurrencyProbe {
    private(set) var running = 0
    private(set) var maxRunning = 0
    private(set) var started = 0

    /// Wraps `publisher` so that its subscription, completion and cancellation are counted.
    func track<P: Publisher>(_ publisher: P) -> AnyPublisher<P.Output, P.Failure> {
        var isRunning = false
        return publisher
            .handleEvents(
                receiveSubscription: { [self] _ in
                    isRunning = true
                    started += 1
                    running += 1
                    maxRunning = max(maxRunning, running)
                },
                receiveCompletion: { [self] _ in
                    if isRunning {
                        isRunning = false
                        running -= 1
                    }
                },
                receiveCancel: { [self] in
                    if isRunning {
                        isRunning = false
                        running -= 1
                    }
                }
            )
            .eraseToAnyPublisher()
    }
}

/// The address of a local variable of the caller's frame: how deep the stack is.
@inline(never)
func currentStackAddress() -> Int {
    var marker = 0
    return withUnsafeMutablePointer(to: &marker) { Int(bitPattern: $0) }
}

// MARK: - Racing threads

/// Runs `first` and `second` at the same moment on two threads, each after spinning its own
/// number of rounds (a round is one read of the clock, some tens of nanoseconds), and returns
/// when both returned. A property test draws the spins and so drives the interleaving.
///
///     await race(spinning: 3, { subscriber.request(.max(1)) }, spinning: 40, { upstream.send(completion: .finished) })
///
/// The caller is suspended while the threads race, not blocked: a property test races
/// thousands of times, and a test that waited on a semaphore held one of the cooperative
/// pool's threads (one per core) for all of them. Two such tests side by side held the whole
/// pool of a 2-core machine for some 25 s, and every other test's awaited step waited with
/// it (tokens seen expiring 11 s late, upstream calls timing out in tests that never stalled).
@available(macOS 15.0, *)
func race(
    spinning firstSpin: Int, _ first: @escaping () -> Void,
    spinning secondSpin: Int, _ second: @escaping () -> Void
) async {
    let barrier = StartBarrier(parties: 2)
    let running = Countdown(2)
    await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
        for (rounds, body) in [(firstSpin, first), (secondSpin, second)] {
            nonisolated(unsafe) let body = body
            Thread {
                barrier.arriveAndWait()
                spin(rounds)
                body()
                if running.arrive() { finished.resume() }
            }.start()
        }
    }
}

/// Counts parties down; the last to arrive is told so.
@available(macOS 15.0, *)
private final class Countdown: Sendable {
    private let left: Atomic<Int>

    init(_ parties: Int) {
        left = Atomic(parties)
    }

    /// True for the last party.
    func arrive() -> Bool {
        left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }
}

/// Busy-waits `rounds` reads of the clock.
func spin(_ rounds: Int) {
    for _ in 0..<rounds {
        _ = DispatchTime.now()
    }
}

/// Lets threads start together: each spins on an atomic counter until all have arrived (no
/// lock, whose waiters the kernel would put to sleep, so they leave within nanoseconds of one
/// another when both are running).
@available(macOS 15.0, *)
private final class StartBarrier: Sendable {
    private let parties: Int
    private let arrived = Atomic(0)

    init(parties: Int) {
        self.parties = parties
    }

    /// Spins until every party arrived; after the first ~100 µs of spinning it yields the core
    /// on each round: on a busy machine the other party may not be running yet, and a thread
    /// spinning through its whole time slice only keeps it (and every other test) waiting.
    func arriveAndWait() {
        arrived.add(1, ordering: .acquiringAndReleasing)
        var rounds = 0
        while arrived.load(ordering: .acquiring) < parties {
            rounds += 1
            if rounds > 100_000 { sched_yield() }
        }
    }
}

/// A thread-safe subscriber that checks the Combine contract when several threads call it:
/// no two calls at once, nothing before the subscription, nothing after the completion,
/// never more values than requested. The subscription and each value are held for
/// `holdRounds` spins, to widen the window in which another thread could call in.
final class ContractProbe<Input, Failure: Error>: Subscriber, @unchecked Sendable {
    enum Event {
        case value(Input)
        case completion(Subscribers.Completion<Failure>)
    }

    private let lock = NSLock()
    private let initialDemand: Subscribers.Demand
    private let holdRounds: Int
    private var callsInside = 0
    private var subscription: (any Subscription)?
    private var outstanding = Subscribers.Demand.none
    private var _events: [Event] = []
    private var _violations: [String] = []

    init(initialDemand: Subscribers.Demand = .none, holdRounds: Int = 0) {
        self.initialDemand = initialDemand
        self.holdRounds = holdRounds
    }

    var events: [Event] { lock.withLock { _events } }
    var violations: [String] { lock.withLock { _violations } }
    var completionCount: Int {
        events.filter { if case .completion = $0 { true } else { false } }.count
    }

    func request(_ demand: Subscribers.Demand) {
        let subscription = lock.withLock {
            outstanding += demand
            return self.subscription
        }
        subscription?.request(demand)
    }

    func receive(subscription: any Subscription) {
        enter("subscription")
        lock.withLock {
            if self.subscription != nil { _violations.append("a second subscription") }
            self.subscription = subscription
            outstanding += initialDemand
        }
        if initialDemand > 0 { subscription.request(initialDemand) }
        spin(holdRounds)
        leave()
    }

    func receive(_ input: Input) -> Subscribers.Demand {
        enter("value \(input)")
        lock.withLock {
            if outstanding == 0 { _violations.append("value \(input) beyond the demand") } else { outstanding -= 1 }
            _events.append(.value(input))
        }
        spin(holdRounds)
        leave()
        return .none
    }

    func receive(completion: Subscribers.Completion<Failure>) {
        enter("completion")
        lock.withLock { _events.append(.completion(completion)) }
        leave()
    }

    private func enter(_ event: String) {
        lock.withLock {
            if callsInside > 0 { _violations.append("\(event) while another call is inside") }
            if subscription == nil, event != "subscription" { _violations.append("\(event) before the subscription") }
            if _events.contains(where: { if case .completion = $0 { true } else { false } }) {
                _violations.append("\(event) after the completion")
            }
            callsInside += 1
        }
    }

    private func leave() {
        lock.withLock { callsInside -= 1 }
    }
}
