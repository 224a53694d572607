import Aggregation
import Synchronization

/// The last good JSON document of each URL of the resources that answer stale if error
/// (`resources.NAME.staleIfError`), kept for the whole process: a worker whose fetch fails
/// answers with the document any worker fetched last, not only its own.
///
/// One store under a lock rather than one per worker: a ``Snapshot`` is immutable bytes, so
/// sharing costs one short critical section per answer (a dictionary read or write), and a
/// process with W workers keeps one copy of each document, not W, and never answers an older
/// document than it has. Bounded: at most ``maximumURLsPerResource`` URLs per resource (a
/// search resource has one per query); a new URL beyond that evicts the one fetched longest
/// ago. Only resources with `staleIfError` write here (``JSONAnswers`` checks).
///
/// ```swift
/// store.keep(snapshot, resource: "search", url: "swift")
/// if let kept = store.latest(resource: "search", url: "swift", notOlderThan: .seconds(60)) { … }
/// ```
final class StaleSnapshots: Sendable {
    /// A document as it was fetched, and when.
    struct Kept: Sendable {
        let snapshot: Snapshot
        let fetchedAt: ContinuousClock.Instant
    }

    /// URLs kept per resource (each the size of one document).
    static let maximumURLsPerResource = 1_000

    private let limit: Int
    /// Resource name → URL (what in it shapes the document) → its last good document.
    private let kept = Mutex<[String: [String: Kept]]>([:])

    init(limitPerResource: Int = maximumURLsPerResource) {
        limit = limitPerResource
    }

    /// Keeps `snapshot` as the last good document of `url` of `resource`, fetched `at`.
    func keep(_ snapshot: Snapshot, resource: String, url: String, at fetchedAt: ContinuousClock.Instant = .now) {
        kept.withLock { kept in
            if let oldest = Self.urlToEvict(from: kept[resource], making: url, roomWithin: limit) {
                kept[resource]?[oldest] = nil
            }
            kept[resource, default: [:]][url] = Kept(snapshot: snapshot, fetchedAt: fetchedAt)
        }
    }

    /// The URL fetched longest ago, when `url` is new and `documents` are full (mutated in
    /// place after, so the dictionary is not copied).
    private static func urlToEvict(from documents: [String: Kept]?, making url: String, roomWithin limit: Int) -> String? {
        guard let documents, documents[url] == nil, documents.count >= limit else { return nil }
        return documents.min { $0.value.fetchedAt < $1.value.fetchedAt }?.key
    }

    /// The last good document of `url` of `resource`, if it was fetched at most `maximumAge`
    /// before `now`.
    func latest(
        resource: String, url: String, notOlderThan maximumAge: Duration, now: ContinuousClock.Instant = .now
    ) -> Kept? {
        guard let found = kept.withLock({ $0[resource]?[url] }), now - found.fetchedAt <= maximumAge else { return nil }
        return found
    }
}
