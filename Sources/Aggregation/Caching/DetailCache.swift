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
/// An entry is fresh for `details.cacheFor` (``DetailFreshness``: a fixed time, or what its
/// upstream answer's `Cache-Control` says). An expired entry whose answer had validators
/// stays (within the budget) to be revalidated: the next fetch of the detail asks with them,
/// and a `304` makes the kept details fresh again (``refresh(_:with:)``).
///
/// Each entry is kept in a text of its own (``compact(_:)``), never as a part of the upstream's
/// body: a batch answer's items would otherwise each hold the whole answer, uncounted.
///
/// ```swift
/// let cache = DetailCache(maxAge: .seconds(30), budget: 32 << 20)
/// cache.keep(details, for: DetailCache.Key(identity: .anonymous, call: "/groups/g1/metadata"))
/// cache.details(for: key)        // the details, until 30 s after they were kept
/// cache.lookup(key)              // .fresh(details), then .stale(details, validators) to revalidate
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
    public let freshness: DetailFreshness
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let store: Mutex<ByteBudgetedEntries<Key, Fetched>>

    private struct Fetched {
        let details: JSON
        var freshUntil: ContinuousClock.Instant
        let validators: Validators?
        /// What its answer said of its freshness: a `304` that says nothing keeps it (RFC 9111 §4.3.4).
        var cacheControl: String?
    }

    /// What the cache holds for a key.
    public enum Lookup {
        /// Details to use as they are.
        case fresh(JSON)
        /// Expired details whose answer had validators: ask with them, and a `304` makes them fresh.
        case stale(JSON, Validators)
        case missing
    }

    /// A cache of at most `budget` bytes whose details are reused for `maxAge`; `clock` tells
    /// the time (tests turn it by hand).
    public convenience init(maxAge: Duration, budget: Int, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.init(freshness: .fixed(maxAge), budget: budget, clock: clock)
    }

    /// A cache of at most `budget` bytes whose details are fresh as `freshness` says.
    public init(freshness: DetailFreshness, budget: Int, clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.freshness = freshness
        self.clock = clock
        store = Mutex(ByteBudgetedEntries(budget: budget))
    }

    /// The details kept for `key`, if still fresh; a hit counts as a use (the least recently
    /// used go first).
    public func details(for key: Key) -> JSON? {
        if case .fresh(let details) = lookup(key) { return details }
        return nil
    }

    /// What the cache holds for `key`: fresh details, expired ones to revalidate, or nothing
    /// (an expired entry without validators is dropped). A hit counts as a use.
    public func lookup(_ key: Key) -> Lookup {
        let now = clock()
        return store.withLock { store -> Lookup in
            guard let fetched = store[key] else { return .missing }
            if now < fetched.freshUntil {
                store.touch(key)
                return .fresh(fetched.details)
            }
            guard let validators = fetched.validators else {
                store.remove(key)
                return .missing
            }
            store.touch(key)
            return .stale(fetched.details, validators)
        }
    }

    /// Keeps `details` (an object, in a text of its own: ``compact(_:)``) for `key`, fetched
    /// now by an answer with `headers`, in place of what it had. Not kept: details larger than
    /// the whole budget, an answer that says `no-store` (which also drops what was kept), and
    /// one fresh for no time that cannot be revalidated.
    public func keep(_ details: JSON, for key: Key, answer headers: AnswerHeaders = AnswerHeaders()) {
        guard let lifetime = freshness.lifetime(of: headers), lifetime > .zero || headers.validators != nil else {
            return store.withLock { $0.remove(key) }
        }
        let fetched = Fetched(details: details, freshUntil: clock() + lifetime, validators: headers.validators, cacheControl: headers.cacheControl)
        store.withLock { $0.keep(fetched, for: key, bytes: Self.bytes(of: fetched, for: key)) }
    }

    /// `key`'s details are current again (a `304` to their validators, with `headers`): fresh
    /// for another lifetime, or dropped when the answer now says `no-store`.
    public func refresh(_ key: Key, with headers: AnswerHeaders) {
        let now = clock()
        store.withLock { store in
            guard var fetched = store[key] else { return }
            let said = headers.cacheControl == nil ? AnswerHeaders(validators: headers.validators, cacheControl: fetched.cacheControl) : headers
            guard let lifetime = freshness.lifetime(of: said) else { return store.remove(key) }
            fetched.cacheControl = said.cacheControl
            store.remove(key)
            fetched.freshUntil = now + lifetime
            store.keep(fetched, for: key, bytes: Self.bytes(of: fetched, for: key))
        }
    }

    /// What an entry counts: its details' text, its key's, its validators and the bookkeeping.
    private static func bytes(of fetched: Fetched, for key: Key) -> Int {
        fetched.details.serializedCount + key.call.utf8.count + key.identity.digest.utf8.count
            + (fetched.validators?.byteCount ?? 0) + entryOverhead
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
