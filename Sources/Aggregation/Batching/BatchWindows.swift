/// One worker's open batch windows (`details.batchWindow`): a ``DetailBatchLoader`` for each
/// call context that has ids waiting or in flight, so that the snapshots of that context (JSON
/// answers and live pipelines alike) share its calls. Loop-confined: a loader's calls, timer
/// and waiters are all on the worker's loop.
///
/// A context is the resource, its batch call for the request's parameter values (as rendered:
/// values the batch path does not use do not split it) and the caller's ``Identity``: the
/// caller's forwarded headers go on every call, so ids of two identities never share one. A
/// loader is forgotten as soon as it has nothing waiting or in flight.
///
/// ```swift
/// let windows = BatchWindows()      // one per worker
/// ListResource(name: "groups", upstream: tasks, definition: batched, sharing: DetailSharing(…, windows: windows, …))
/// ```
public final class BatchWindows {
    /// A call context.
    struct Key: Hashable {
        let resource: String
        /// The batch call up to its ids (``BatchCallPath/start``).
        let call: String
        let identity: Identity
    }

    private var loaders: [Key: DetailBatchLoader] = [:]

    public init() {}

    /// The open loader of `resource`'s context, or a new one. A loader open for another
    /// definition of the resource (a reload changed it) is replaced; it serves its waiters on.
    func loader(for resource: ListResource, batch: DetailBatch, callPath: BatchCallPath) -> DetailBatchLoader {
        let key = Key(resource: resource.name, call: callPath.start, identity: resource.identity)
        if let loader = loaders[key], loader.serves(resource) { return loader }
        let loader = DetailBatchLoader(
            resource: resource, batch: batch, callPath: callPath, window: resource.definition.batchWindow, key: key, windows: self)
        loaders[key] = loader
        return loader
    }

    /// `loader` has nothing waiting or in flight.
    func loaderIsIdle(_ loader: DetailBatchLoader) {
        guard let key = loader.key, loaders[key] === loader else { return }
        loaders[key] = nil
    }

    /// Loaders open now: contexts with ids waiting or in flight.
    public var openCount: Int { loaders.count }
}
