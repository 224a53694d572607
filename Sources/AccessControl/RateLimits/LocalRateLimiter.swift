import Aggregation
import Synchronization
import TributaryConfiguration

/// The process's rate limits: each client's TAT (``GCRA``) under each policy, for every
/// worker at once (one lock: a client's requests land on any worker, and the limit is the
/// process's). Alone this is the limit; in a fleet it is the fallback while Redis is away.
///
/// Bounded by memory, in O(1): it holds at most ``capacity`` buckets (one per client and
/// policy; `server.maxRateLimitBuckets`, default 100,000, some 200 bytes each), in a
/// ``RecencyTable``. A new client's bucket takes the place of the least recently seen one's,
/// so each decision costs one lookup and at most one eviction, however many clients a flood
/// of fresh names (addresses of a /48, `X-Forwarded-For` values, subjects) brings.
///
/// Why forgetting a bucket is acceptable: it can only make its client look fresher (a whole
/// burst again), never refuse anyone. And the one forgotten is the least recently seen: it
/// goes only after `capacity` other buckets were used since its client's last request, each
/// of them a client with a whole burst of its own. A client refused now and asking again is
/// seen again, so it stays at the front; to get its burst back sooner it would have to bring
/// `capacity` fresh names first, which are `capacity` whole bursts already: at most one more
/// burst in `capacity + 1`.
package final class LocalRateLimiter: Sendable {
    /// `server.maxRateLimitBuckets`' default.
    static let defaultCapacity = Configuration.Server().maxRateLimitBuckets

    /// A client under one policy, compared by its bytes, as everything from outside is keyed:
    /// two token subjects that differ only by Unicode equivalence (`K` and the Kelvin sign)
    /// are two clients, each with its own burst.
    ///
    /// Its hash is taken once, when the key is made, before the lock: the table hashes a key
    /// up to four times in one decision (a lookup, a second for the insert, an evicted key's
    /// removal, the insert itself), all under the one lock every worker waits on.
    struct Key: Hashable, Sendable {
        let policy: String
        let client: String
        private let hash: Int

        init(policy: String, client: String) {
            self.policy = policy
            self.client = client
            var hasher = Hasher()
            ExactText.hash(policy, into: &hasher)
            ExactText.hash(client, into: &hasher)
            hash = hasher.finalize()
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.hash == rhs.hash && lhs.client.utf8.elementsEqual(rhs.client.utf8) && lhs.policy.utf8.elementsEqual(rhs.policy.utf8)
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }
    }

    let capacity: Int
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private let tats: Mutex<RecencyTable<Key, Int64>>

    package init(capacity: Int = LocalRateLimiter.defaultCapacity) {
        self.capacity = capacity
        tats = Mutex(RecencyTable(capacity: capacity))
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
            // Read even when refused: a client that keeps asking stays the most recent.
            let known = tats[key]
            var tat = known ?? 0
            let decision = gcra.decide(tat: &tat, now: now)
            if decision.admitted { tats[key] = tat }
            return decision
        }
    }

    /// Buckets held now (at most ``capacity``).
    var clientCount: Int { tats.withLock { $0.count } }

    /// Buckets forgotten to make room for new ones since the limiter was made.
    var evictions: Int { tats.withLock { $0.evictions } }
}
