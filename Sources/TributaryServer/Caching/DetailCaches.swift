import Aggregation
import Synchronization
import TributaryConfiguration

/// The process's detail caches (`resources.NAME.details.cacheFor`): one ``DetailCache`` per
/// list resource that has one, shared by every worker, so a detail any worker fetched serves
/// them all. A cache belongs to one definition of its resource (its upstream included): a
/// reload that changes the resource starts it a new, empty cache (details of another shape or
/// origin are never reused), and one that removes the resource or its `cacheFor` drops it.
/// Thread-safe: workers mount their resources on their own loops.
final class DetailCaches: Sendable {
    private let caches = Mutex<[String: (definition: Configuration.ResourceDefinition, cache: DetailCache)]>([:])

    /// The cache of resource `name` as `definition` says, or nil when it keeps none.
    func cache(for name: String, definition: Configuration.ResourceDefinition) -> DetailCache? {
        guard case .list(let settings) = definition.resource, settings.definition.detailFreshness.keepsDetails else {
            caches.withLock { _ = $0.removeValue(forKey: name) }
            return nil
        }
        return caches.withLock { caches in
            if let known = caches[name], known.definition == definition { return known.cache }
            let cache = DetailCache(freshness: settings.definition.detailFreshness, budget: settings.definition.cacheBytes)
            caches[name] = (definition, cache)
            return cache
        }
    }

    /// Drops the cache of a resource no longer served.
    func forget(_ name: String) {
        caches.withLock { _ = $0.removeValue(forKey: name) }
    }
}
