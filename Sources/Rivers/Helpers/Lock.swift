#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The mutual-exclusion lock that guards the state of one Rivers subscription.
///
/// Every operator follows OpenCombine's rule: take the lock, read or change state, release
/// it, and only then call downstream or upstream. The lock is therefore never held across a
/// call out of the subscription and need not be recursive.
///
///     lock.lock()
///     demand += newDemand
///     lock.unlock()
internal final class Lock {
    #if canImport(Darwin)
    private let primitive = UnsafeMutablePointer<os_unfair_lock_s>.allocate(capacity: 1)

    init() {
        primitive.initialize(to: os_unfair_lock_s())
    }

    deinit {
        primitive.deinitialize(count: 1)
        primitive.deallocate()
    }

    func lock() {
        os_unfair_lock_lock(primitive)
    }

    func unlock() {
        os_unfair_lock_unlock(primitive)
    }
    #else
    private let primitive = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        primitive.initialize(to: pthread_mutex_t())
        let result = pthread_mutex_init(primitive, nil)
        precondition(result == 0, "pthread_mutex_init failed: \(result)")
    }

    deinit {
        pthread_mutex_destroy(primitive)
        primitive.deinitialize(count: 1)
        primitive.deallocate()
    }

    func lock() {
        pthread_mutex_lock(primitive)
    }

    func unlock() {
        pthread_mutex_unlock(primitive)
    }
    #endif

    /// Runs `body` with the lock held. `body` must not call out of the subscription.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
