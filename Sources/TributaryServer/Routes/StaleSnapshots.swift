import Aggregation
import Synchronization

/// The last good JSON document of each ``SharingKey`` (resource, parameter values, identity:
/// a document is never answered to another identity) of the resources that answer stale if error
/// (`resources.NAME.staleIfError`), kept for the whole process: a worker whose fetch fails
/// answers with the document any worker fetched last, not only its own.
///
/// One store under a lock rather than one per worker: a ``Snapshot`` is immutable bytes, so
/// sharing costs one short critical section per answer (a dictionary read or write), and a
/// process with W workers keeps one copy of each document, not W, and never answers an older
/// document than it has. Bounded by bytes (`server.staleIfErrorBytes`, 64 MiB by default),
/// whatever the number of keys (a search resource has one per query, a per-identity one one
/// per client) or the size of their documents: keeping a document beyond the budget evicts
/// those fetched longest ago. Each document counts its JSON, its key's text and ``entryOverhead``. Only resources with
/// `staleIfError` write here (``JSONAnswers`` checks).
///
/// ```swift
/// store.keep(snapshot, for: key)
/// if let kept = store.latest(for: key, notOlderThan: .seconds(60)) { … }
/// ```
final class StaleSnapshots: Sendable {
    /// A document as it was fetched, and when.
    struct Kept: Sendable {
        let snapshot: Snapshot
        let fetchedAt: ContinuousClock.Instant
    }

    /// What one kept document costs beyond its JSON and URL bytes: its dictionary slot (key,
    /// snapshot, time) with the table's slack, its place in the eviction order, the headers
    /// of its heap objects and its version's text. Measured: 300,000 documents of 2 bytes
    /// with 13-byte keys grew the process by ~320 bytes each (RSS), snapshots included.
    static let entryOverhead = 384

    private struct Entry {
        let kept: Kept
        /// Its place in ``Store/order``.
        let stamp: UInt64
        let bytes: Int
    }

    private struct Store {
        var budget: Int
        var entries: [SharingKey: Entry] = [:]
        var bytes = 0
        /// Keys in the order they were kept, oldest first from `orderHead`, each with the
        /// stamp it was kept with: a key kept again leaves its older place behind, skipped
        /// as its stamp no longer matches, and dropped when the places outnumber the
        /// documents (so a key fetched over and over does not grow the order).
        var order: [(key: SharingKey, stamp: UInt64)] = []
        var orderHead = 0
        var nextStamp: UInt64 = 0
    }

    private let store: Mutex<Store>

    /// A store of at most `budget` bytes (`server.staleIfErrorBytes`).
    init(budget: Int) {
        store = Mutex(Store(budget: budget))
    }

    /// The budget in bytes; a smaller one evicts at once what no longer fits.
    var budget: Int {
        get { store.withLock { $0.budget } }
        set {
            store.withLock { store in
                store.budget = newValue
                Self.evictBeyondBudget(&store)
            }
        }
    }

    /// Bytes the kept documents count now (at most ``budget``).
    var keptBytes: Int { store.withLock { $0.bytes } }

    /// Documents kept now.
    var keptCount: Int { store.withLock { $0.entries.count } }

    /// Places the eviction order holds now, those of documents gone included (at most about
    /// twice ``keptCount``, plus a few).
    var orderSlots: Int { store.withLock { $0.order.count } }

    /// Keeps `snapshot` as the last good document of `key`, fetched `at`, in place of the one
    /// it had. A document larger than the whole budget is not kept (nor the one it replaces:
    /// older than what the upstream answered last).
    func keep(_ snapshot: Snapshot, for key: SharingKey, at fetchedAt: ContinuousClock.Instant = .now) {
        let bytes = snapshot.json.count + key.canonicalText.utf8.count + Self.entryOverhead
        store.withLock { store in
            if let replaced = store.entries.removeValue(forKey: key) { store.bytes -= replaced.bytes }
            if bytes <= store.budget {
                store.nextStamp += 1
                store.entries[key] = Entry(kept: Kept(snapshot: snapshot, fetchedAt: fetchedAt), stamp: store.nextStamp, bytes: bytes)
                store.order.append((key, store.nextStamp))
                store.bytes += bytes
                Self.evictBeyondBudget(&store)
            }
            Self.compactOrder(&store)
        }
    }

    /// The last good document of `key`, if it was fetched at most `maximumAge` before `now`.
    func latest(for key: SharingKey, notOlderThan maximumAge: Duration, now: ContinuousClock.Instant = .now) -> Kept? {
        guard let found = store.withLock({ $0.entries[key]?.kept }), now - found.fetchedAt <= maximumAge else { return nil }
        return found
    }

    /// Evicts the documents kept longest ago until the rest fit the budget.
    private static func evictBeyondBudget(_ store: inout Store) {
        while store.bytes > store.budget, store.orderHead < store.order.count {
            let (key, stamp) = store.order[store.orderHead]
            store.orderHead += 1
            if let entry = store.entries[key], entry.stamp == stamp {
                store.entries[key] = nil
                store.bytes -= entry.bytes
            }
        }
    }

    /// Drops the order's places that name no document any more: those eviction passed, once
    /// they are as many as the rest, and those of documents kept again since, once the places
    /// left are more than twice the documents. Each place is dropped once, so keeping stays
    /// O(1) amortized.
    private static func compactOrder(_ store: inout Store) {
        let slots = store.order.count - store.orderHead
        if slots > 2 * store.entries.count + 16 {
            let entries = store.entries
            store.order = store.order[store.orderHead...].filter { entries[$0.key]?.stamp == $0.stamp }
            store.orderHead = 0
        } else if store.orderHead > 16 && store.orderHead >= slots {
            store.order.removeFirst(store.orderHead)
            store.orderHead = 0
        }
    }
}
