import Synchronization

/// State shared between a server thread and a test, which the test can *await* a condition
/// on instead of sleeping: every ``update(_:)`` re-checks the waiting conditions.
///
/// ```swift
/// let closed = Observed(false)
/// request.onDisconnect = { closed.update { $0 = true } }
/// #expect(await closed.wait(timeout: .seconds(2)) { $0 })
/// ```
public final class Observed<State: Sendable>: Sendable {
    private struct Waiter {
        let id: UInt64
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct Storage {
        var state: State
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let storage: Mutex<Storage>

    public init(_ initial: State) {
        storage = Mutex(Storage(state: initial))
    }

    public var value: State { storage.withLock { $0.state } }

    /// Changes the state and wakes the waiters whose condition now holds.
    public func update(_ change: (inout State) -> Void) {
        let satisfied = storage.withLock { storage -> [Waiter] in
            change(&storage.state)
            let state = storage.state
            let (ready, waiting) = storage.waiters.partitioned { $0.condition(state) }
            storage.waiters = waiting
            return ready
        }
        for waiter in satisfied { waiter.continuation.resume(returning: true) }
    }

    /// Waits until `condition` holds (true) or `timeout` passes (false).
    public func wait(timeout: Duration, until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
        let id: UInt64 = storage.withLock { storage in
            storage.nextID += 1
            return storage.nextID
        }
        let timer = Mutex<Task<Void, Never>?>(nil)
        let satisfied = await withCheckedContinuation { continuation in
            let satisfiedNow = storage.withLock { storage -> Bool in
                if condition(storage.state) { return true }
                storage.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                return false
            }
            if satisfiedNow {
                continuation.resume(returning: true)
            } else {
                timer.withLock { $0 = Task { try? await Task.sleep(for: timeout); self.expire(id) } }
            }
        }
        timer.withLock { $0?.cancel() }
        return satisfied
    }

    private func expire(_ id: UInt64) {
        let expired = storage.withLock { storage -> Waiter? in
            guard let index = storage.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return storage.waiters.remove(at: index)
        }
        expired?.continuation.resume(returning: false)
    }
}

extension Array {
    fileprivate func partitioned(by belongsInFirst: (Element) -> Bool) -> ([Element], [Element]) {
        var first: [Element] = []
        var second: [Element] = []
        for element in self {
            if belongsInFirst(element) { first.append(element) } else { second.append(element) }
        }
        return (first, second)
    }
}
