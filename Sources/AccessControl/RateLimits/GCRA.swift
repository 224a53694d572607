import HTTPCore
import TributaryConfiguration

/// The generic cell rate algorithm (a leaky bucket written as one number per client): each
/// admitted request pushes the client's *theoretical arrival time* (TAT) one emission
/// interval `1/rate` further; a request is admitted while the TAT it would set stays within
/// `burst` intervals of now. So `burst` requests pass at once, then one per interval, and a
/// client that pauses earns its burst back at `rate`. The same arithmetic runs here for a
/// process's limits and in Redis's script (``FleetRateLimiter``) for a fleet's. Times are
/// microseconds.
///
/// ```swift
/// let gcra = GCRA(Configuration.RateLimit(perSecond: 1, burst: 5))
/// var tat: Int64 = 0
/// let decision = gcra.decide(tat: &tat, now: now)   // admitted, 4 remaining
/// ```
struct GCRA: Sendable, Equatable {
    /// Microseconds between two requests at the rate.
    let interval: Int64
    /// How far ahead of now a TAT may be: `burst` intervals.
    let capacity: Int64
    let burst: Int

    /// Saturating throughout (``HTTPCore``'s rule for numbers from outside): the settings'
    /// ranges keep `interval * burst` far from `Int64.max`, but a limit made otherwise must
    /// not trap either.
    init(_ limit: Configuration.RateLimit) {
        interval = max(1, Int64(saturating: 1_000_000 / limit.perSecond) ?? 1)
        burst = limit.burst
        capacity = interval.multipliedSaturated(by: Int64(limit.burst))
    }

    /// Decides a request at `now` for a client whose TAT is `tat` (0 or past: none pending),
    /// updating it when the request is admitted.
    func decide(tat: inout Int64, now: Int64) -> RateDecision {
        let next = max(tat, now).addingSaturated(interval)
        let ahead = next - now
        let admitted = ahead <= capacity
        if admitted { tat = next }
        return decision(admitted: admitted, ahead: ahead)
    }

    /// What a decision tells the client, from whether it was admitted and how far ahead of
    /// now the TAT is (admitted: the TAT it set; refused: the one it would have set).
    /// `ahead` may come from Redis (``FleetRateLimiter``): it is clamped to what a decision
    /// can set, `capacity + interval`.
    func decision(admitted: Bool, ahead: Int64) -> RateDecision {
        let ahead = ahead.clamped(to: 0...capacity.addingSaturated(interval))
        if admitted {
            return RateDecision(
                admitted: true, remaining: Int(max(0, (capacity - ahead) / interval)), resetSeconds: Self.wholeSeconds(ahead),
                retryAfterSeconds: 0)
        }
        return RateDecision(
            admitted: false, remaining: 0, resetSeconds: Self.wholeSeconds(ahead - interval),
            retryAfterSeconds: max(1, Self.wholeSeconds(ahead - capacity)))
    }

    /// The window of the `RateLimit-Policy` header: how long an empty bucket takes to fill.
    var windowSeconds: Int { max(1, Self.wholeSeconds(capacity)) }

    /// Microseconds rounded up to whole seconds.
    static func wholeSeconds(_ microseconds: Int64) -> Int {
        Int(max(0, microseconds.addingSaturated(999_999) / 1_000_000))
    }
}

/// What a rate limit decided for one request, as the headers tell it.
struct RateDecision: Sendable, Equatable {
    let admitted: Bool
    /// Requests the client may still make at once.
    let remaining: Int
    /// Seconds until its whole burst is back.
    let resetSeconds: Int
    /// Seconds until a request may be admitted again (refused ones only).
    let retryAfterSeconds: Int
}
