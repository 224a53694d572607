import OpenCombine

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
