import Synchronization

/// The details of a list resource's items, kept for `details.cacheFor` across requests and
/// workers: an item whose details were fetched that recently is merged without an upstream
/// call. One cache per resource for the whole process (a worker reads what any worker
/// fetched), bounded by bytes (`details.cacheBytes`): keeping beyond the budget evicts the
/// details used longest ago.
///
/// Keyed by the call that fetched the details (the item's id and the resource's parameter
/// values are in it) and by the ``Identity`` it was fetched for, so no identity ever reads
/// details fetched with another's credentials.
///
/// Each entry is kept in a text of its own (``compact(_:)``), never as a part of the upstream's
/// body: a batch answer's items would otherwise each hold the whole answer, uncounted.
///
/// ```swift
/// let cache = DetailCache(maxAge: .seconds(30), budget: 32 << 20)
/// cache.keep(details, for: DetailCache.Key(identity: .anonymous, call: "/groups/g1/metadata"))
/// cache.details(for: key)        // the details, until 30 s after they were kept
/// ```
public final class DetailCache: Sendable {
    /// Whose details, fetched by which call.
    public struct Key: Hashable, Sendable {
        public let identity: Identity
        /// The detail call for the item, e.g. `/groups/g1/metadata`, or the batch call for
        /// its id alone, `/groups/metadata?ids=g1`.
        public let call: String

        public init(identity: Identity, call: String) {
            self.identity = identity
            self.call = call
        }
    }

    /// What an entry costs beyond its text and its key's: its dictionary slot and its place
    /// in the eviction order (an estimate: the stale-if-error store measured 384 for entries alike).
    public static let entryOverhead = 384

    /// How long details are reused after they were fetched.
    public let maxAge: Duration
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let store: Mutex<ByteBudgetedEntries<Key, Fetched>>

    private struct Fetched {
        let details: JSON
        let at: ContinuousClock.Instant
    }

    /// A cache of at most `budget` bytes whose details are reused for `maxAge`; `clock` tells
    /// the time (tests turn it by hand).
    public init(maxAge: Duration, budget: Int, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.maxAge = maxAge
        self.clock = clock
        store = Mutex(ByteBudgetedEntries(budget: budget))
    }

    /// The details kept for `key`, if fetched no longer than ``maxAge`` ago; a hit counts as
    /// a use (the least recently used go first).
    public func details(for key: Key) -> JSON? {
        let now = clock()
        return store.withLock { store -> JSON? in
            guard let fetched = store[key] else { return nil }
            guard now - fetched.at < maxAge else {
                store.remove(key)
                return nil
            }
            store.touch(key)
            return fetched.details
        }
    }

    /// Keeps `details` (an object, in a text of its own: ``compact(_:)``) for `key`, fetched
    /// now, in place of what it had. Details larger than the whole budget are not kept.
    public func keep(_ details: JSON, for key: Key) {
        let bytes = details.serializedCount + key.call.utf8.count + key.identity.digest.utf8.count + Self.entryOverhead
        let fetched = Fetched(details: details, at: clock())
        store.withLock { $0.keep(fetched, for: key, bytes: bytes) }
    }

    /// Bytes the entries count now (at most the budget).
    public var keptBytes: Int { store.withLock { $0.bytes } }

    /// Entries kept now.
    public var keptCount: Int { store.withLock { $0.count } }

    /// Places the order holds now, those of entries gone or used again included (about
    /// twice ``keptCount`` at most, plus a few).
    public var orderSlots: Int { store.withLock { $0.orderSlots } }

    /// `details` in a text of its own, as the cache keeps it: an object kept as a part of a
    /// larger body (a batch answer, a detail answer) is copied out, so the entry holds and
    /// counts only its own bytes.
    public static func compact(_ details: JSON) -> JSON {
        (try? JSON(parsing: details.serialized, keeping: .objects)) ?? details
    }
}

extension JSON {
    /// Whether it is an object (kept as text or not).
    var isObject: Bool {
        switch self {
        case .object, .raw: true
        default: false
        }
    }

    /// The length of ``serialized`` in bytes: a kept object's text length, else counted by
    /// writing it.
    var serializedCount: Int {
        if case .raw(let raw) = self { return raw.textCount }
        return serialized.count
    }
}
