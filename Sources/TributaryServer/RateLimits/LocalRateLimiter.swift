import Synchronization

/// The process's rate limits: each client's TAT (``GCRA``) under each policy, for every
/// worker at once (one lock: a client's requests land on any worker, and the limit is the
/// process's). Alone this is the limit; in a fleet it is the fallback while Redis is away.
///
/// Bounded: when it holds ``purgeAbove`` clients, those whose TAT has passed (their bucket
/// is full again, as if never seen) are dropped.
final class LocalRateLimiter: Sendable {
    static let purgeAbove = 100_000

    /// A client under one policy.
    struct Key: Hashable, Sendable {
        let policy: String
        let client: String
    }

    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private let tats = Mutex<[Key: Int64]>([:])

    init() {
        start = clock.now
    }

    /// Microseconds since the limiter was made.
    var now: Int64 {
        let (seconds, attoseconds) = (clock.now - start).components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    /// Decides one request of `client` under `policy`.
    func decide(_ client: String, policy: String, _ gcra: GCRA) -> RateDecision {
        let now = self.now
        let key = Key(policy: policy, client: client)
        return tats.withLock { tats in
            if tats.count >= Self.purgeAbove { tats = tats.filter { $0.value > now } }
            var tat = tats[key] ?? 0
            let decision = gcra.decide(tat: &tat, now: now)
            if decision.admitted { tats[key] = tat }
            return decision
        }
    }

    var clientCount: Int { tats.withLock { $0.count } }
}
