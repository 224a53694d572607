import CoreMetrics

/// What the snapshots of a list resource share about details beyond one snapshot, made once
/// for each resource a worker serves: the worker's ``BatchWindows`` (with `details.batch` and
/// a `details.batchWindow`), the process's ``DetailCache`` of the resource (with
/// `details.cacheFor`), and the counters of both, by resource (never by id):
///
/// - `tributary_detail_batches_total{resource}`: batch calls made
/// - `tributary_detail_cache_hits_total{resource}`: items merged with cached details
///
/// ```swift
/// let sharing = DetailSharing(resource: "groups", definition: definition, windows: worker.batchWindows, cache: cache)
/// ListResource(name: "groups", upstream: tasks, definition: definition, sharing: sharing)
/// ```
public final class DetailSharing {
    /// Nil unless the resource batches with a window.
    let windows: BatchWindows?
    let cache: DetailCache?
    let batches: Counter?
    let cacheHits: Counter?

    public init(resource: String, definition: ListResource.Definition, windows: BatchWindows? = nil, cache: DetailCache? = nil) {
        self.windows = definition.batch != nil && definition.batchWindow > .zero ? windows : nil
        self.cache = cache
        batches = definition.batch == nil ? nil : Counter(label: "tributary_detail_batches_total", dimensions: [("resource", resource)])
        cacheHits = cache == nil ? nil : Counter(label: "tributary_detail_cache_hits_total", dimensions: [("resource", resource)])
    }
}
