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

    private let store: Mutex<ByteBudgetedEntries<SharingKey, Kept>>

    /// A store of at most `budget` bytes (`server.staleIfErrorBytes`).
    init(budget: Int) {
        store = Mutex(ByteBudgetedEntries(budget: budget))
    }

    /// The budget in bytes; a smaller one evicts at once what no longer fits.
    var budget: Int {
        get { store.withLock { $0.budget } }
        set { store.withLock { $0.budget = newValue } }
    }

    /// Bytes the kept documents count now (at most ``budget``).
    var keptBytes: Int { store.withLock { $0.bytes } }

    /// Documents kept now.
    var keptCount: Int { store.withLock { $0.count } }

    /// Places the eviction order holds now, those of documents gone included (at most about
    /// twice ``keptCount``, plus a few).
    var orderSlots: Int { store.withLock { $0.orderSlots } }

    /// Keeps `snapshot` as the last good document of `key`, fetched `at`, in place of the one
    /// it had. A document larger than the whole budget is not kept (nor the one it replaces:
    /// older than what the upstream answered last).
    func keep(_ snapshot: Snapshot, for key: SharingKey, at fetchedAt: ContinuousClock.Instant = .now) {
        let bytes = snapshot.json.count + key.canonicalText.utf8.count + Self.entryOverhead
        store.withLock { $0.keep(Kept(snapshot: snapshot, fetchedAt: fetchedAt), for: key, bytes: bytes) }
    }

    /// The last good document of `key`, if it was fetched at most `maximumAge` before `now`.
    func latest(for key: SharingKey, notOlderThan maximumAge: Duration, now: ContinuousClock.Instant = .now) -> Kept? {
        guard let found = store.withLock({ $0[key] }), now - found.fetchedAt <= maximumAge else { return nil }
        return found
    }
}
