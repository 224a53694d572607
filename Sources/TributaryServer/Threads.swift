import Glibc
import Synchronization

/// A detached POSIX thread running a closure (each worker loop gets one).
final class DetachedThread: @unchecked Sendable {
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) {
        self.body = body
    }

    func start() {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, &attributes, { context in
            let thread = Unmanaged<DetachedThread>.fromOpaque(context!).takeRetainedValue()
            thread.body()
            return nil
        }, context)
        pthread_attr_destroy(&attributes)
        precondition(result == 0, "pthread_create failed: \(result)")
    }
}

/// A value set once by one thread and awaited by another.
final class Latch<Value: Sendable>: Sendable {
    private let value = Mutex<Value?>(nil)
    private let semaphore = Semaphore()

    func set(_ newValue: Value) {
        value.withLock { $0 = newValue }
        semaphore.signal()
    }

    func wait() -> Value {
        semaphore.wait()
        return value.withLock { $0! }
    }
}

/// A counting semaphore (POSIX `sem_t`).
private final class Semaphore: @unchecked Sendable {
    private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init() { sem_init(semaphore, 0, 0) }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    func signal() { sem_post(semaphore) }

    func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }
}
