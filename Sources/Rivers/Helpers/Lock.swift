#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a ``Lock`` holds: the platform's mutex.
#if canImport(Darwin)
internal typealias LockPrimitive = os_unfair_lock_s
#else
internal typealias LockPrimitive = pthread_mutex_t
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
///
/// The primitive lives in the lock object's own allocation (a `ManagedBuffer`'s element), not
/// in a second one: every subscription of every stream has a lock, so a separate mutex was an
/// allocation per subscriber held for the stream's life, and one more per JSON request.
/// Make one with ``make()``.
internal final class Lock: ManagedBuffer<Void, LockPrimitive> {
    static func make() -> Lock {
        let lock = unsafeDowncast(Lock.create(minimumCapacity: 1) { _ in }, to: Lock.self)
        lock.withUnsafeMutablePointerToElements { primitive in
            #if canImport(Darwin)
            primitive.initialize(to: os_unfair_lock_s())
            #else
            primitive.initialize(to: pthread_mutex_t())
            let result = pthread_mutex_init(primitive, nil)
            precondition(result == 0, "pthread_mutex_init failed: \(result)")
            #endif
        }
        return lock
    }

    deinit {
        withUnsafeMutablePointerToElements { primitive in
            #if !canImport(Darwin)
            pthread_mutex_destroy(primitive)
            #endif
            _ = primitive.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func lock() {
        #if canImport(Darwin)
        withUnsafeMutablePointerToElements { os_unfair_lock_lock($0) }
        #else
        withUnsafeMutablePointerToElements { _ = pthread_mutex_lock($0) }
        #endif
    }

    @inline(__always)
    func unlock() {
        #if canImport(Darwin)
        withUnsafeMutablePointerToElements { os_unfair_lock_unlock($0) }
        #else
        withUnsafeMutablePointerToElements { _ = pthread_mutex_unlock($0) }
        #endif
    }

    /// Runs `body` with the lock held. `body` must not call out of the subscription.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
