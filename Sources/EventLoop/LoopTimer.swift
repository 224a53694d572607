package import CLibevent
import Glibc

/// A libevent timer event on one ``EventLoop``: fires its action once per ``schedule(after:)``
/// (or repeatedly with ``scheduleRepeating(every:)``). Loop-confined.
///
/// The timer owns its `event`; dropping the timer cancels it. The C callback reaches the
/// timer unretained: the event cannot outlive the object that frees it in `deinit`.
///
/// ```swift
/// let heartbeat = LoopTimer(loop: loop) { stream.write(": ping\n\n") }
/// heartbeat.scheduleRepeating(every: .seconds(15))
/// ```
public final class LoopTimer {
    public let loop: EventLoop
    private let action: () -> Void
    private var event: OpaquePointer!
    private var repeatInterval: Duration?

    public init(loop: EventLoop, action: @escaping () -> Void) {
        self.loop = loop
        self.action = action
        let context = Unmanaged.passUnretained(self).toOpaque()
        event = event_new(loop.base, -1, 0, { _, _, context in
            // Held for the whole call: a fire-and-forget timer drops its last reference in `fire`.
            let timer = Unmanaged<LoopTimer>.fromOpaque(context!).takeUnretainedValue()
            withExtendedLifetime(timer) { timer.fire() }
        }, context)
        precondition(event != nil, "event_new failed for a timer (out of memory)")
    }

    deinit {
        event_free(event)
    }

    /// Fires once after `delay` (replacing any earlier schedule).
    public func schedule(after delay: Duration) {
        repeatInterval = nil
        arm(delay)
    }

    /// Fires every `interval`, the first time after one interval.
    public func scheduleRepeating(every interval: Duration) {
        schedule(after: interval, thenEvery: interval)
    }

    /// Fires after `delay`, then every `interval`.
    public func schedule(after delay: Duration, thenEvery interval: Duration) {
        repeatInterval = interval
        arm(delay)
    }

    /// Stops the timer; it can be scheduled again. A timer that is not scheduled is left as
    /// it is: most timers are stopped far more often than they fire (an upstream connection's
    /// inactivity limit at the end of every call), and `event_del` costs its lock pair.
    public func cancel() {
        repeatInterval = nil
        guard isScheduled else { return }
        isScheduled = false
        event_del(event)
    }

    /// Whether the timer will fire: kept here as it is armed, fires and is cancelled (libevent
    /// deletes a timer's event as it fires), rather than asked of libevent under its lock.
    public private(set) var isScheduled = false

    /// A timer never fires before its delay has passed. libevent counts a timeout from the
    /// time it cached when the loop last woke, which can be a while ago inside a long callback,
    /// so the cache is refreshed first; and it reads Linux's coarse monotonic clock, which lags
    /// by up to one tick (4 ms at 250 Hz), so a positive delay gets that tick added.
    private func arm(_ delay: Duration) {
        var time = timeval(delay > .zero ? delay + Self.clockTick : delay)
        event_base_update_cache_time(loop.base)
        event_add(event, &time)
        isScheduled = true
    }

    /// The resolution of the clock libevent's timers read (`CLOCK_MONOTONIC_COARSE`).
    private static let clockTick: Duration = {
        var resolution = timespec()
        guard clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) == 0 else { return .milliseconds(4) }
        return .seconds(resolution.tv_sec) + .nanoseconds(resolution.tv_nsec)
    }()

    private func fire() {
        isScheduled = false
        if let repeatInterval { arm(repeatInterval) }
        action()
    }
}

extension LoopTimer {
    /// A one-shot timer nobody holds: it keeps itself alive (registered with its loop, so it
    /// is freed with the loop if it never fires) until it has fired.
    public static func fireAndForget(loop: EventLoop, after delay: Duration, _ action: @escaping () -> Void) {
        var key: ObjectIdentifier?
        let timer = LoopTimer(loop: loop) { [unowned loop] in
            if let key { loop.selfRetainedTimers[key] = nil }
            action()
        }
        key = ObjectIdentifier(timer)
        loop.selfRetainedTimers[ObjectIdentifier(timer)] = timer
        timer.schedule(after: delay)
    }
}

extension timeval {
    /// A non-negative `timeval` for a libevent timeout (negative durations become zero).
    package init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        if seconds < 0 || (seconds == 0 && attoseconds < 0) {
            self.init(tv_sec: 0, tv_usec: 0)
        } else {
            self.init(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        }
    }
}
