import EventLoop
import HTTPCore
import OpenCombine

extension ListResource {
    /// One snapshot of a batched resource (`details.batch`): the list call, then its items'
    /// details in batch calls (``DetailBatchLoader``), each item merged with its details in
    /// list order, as ``snapshotPublisher(trace:)`` merges them from a call per item: the same
    /// document, byte for byte, whichever way the details came.
    ///
    /// ```
    /// GET /groups ─▶ [a, b, c, …] ─▶ GET /groups/metadata?ids=a,b,…(max) ─┬─▶ [a+meta, b+meta, c+meta, …]
    ///                              └▶ GET /groups/metadata?ids=…          ─┘   (matched by id, list order)
    /// ```
    ///
    /// Details in the cache (`details.cacheFor`) are merged without asking; the other ids are
    /// asked once each (an id listed twice is asked once), of the worker's open window for
    /// the resource's call context when it has `details.batchWindow`, else of a loader of the
    /// snapshot's own. Cancelling withdraws the ids still awaited.
    func batchedSnapshotPublisher(trace: TraceContext) -> OneResultPublisher<JSON, ResourceError> {
        OneResultPublisher { [self] finish in startBatchedFanOut(trace: trace, progress: nil, onResult: finish) }
    }

    /// Starts the fan-out of one batched snapshot, which tells `progress` (if any) of its
    /// partial documents as its batches come in, and `onResult` of its one result.
    func startBatchedFanOut(
        trace: TraceContext, progress: FirstDocumentProgress?, onResult: @escaping (Result<JSON, ResourceError>) -> Void
    ) -> any Cancellable {
        let fanOut = BatchedFanOut(resource: self, trace: trace, progress: progress, onResult: onResult)
        fanOut.start()
        return fanOut
    }

    /// The loader a snapshot asks for its ids: the worker's open one for this call context,
    /// or one of the snapshot's own.
    fileprivate func batchLoader() -> DetailBatchLoader {
        guard let batch = definition.batch, let batchCall else { preconditionFailure("a batched snapshot of an unbatched resource") }
        if let windows = sharing?.windows { return windows.loader(for: self, batch: batch, callPath: batchCall) }
        return DetailBatchLoader(resource: self, batch: batch, callPath: batchCall, window: .zero, key: nil, windows: nil)
    }
}

/// The list call of a batched snapshot, then its ids asked of a loader, each answer merged
/// into every item of that id. Loop-confined.
private final class BatchedFanOut: Cancellable, DetailWaiter {
    let resource: ListResource
    let trace: TraceContext
    /// Told of the partial documents of a progressive first document.
    private let progress: FirstDocumentProgress?
    /// Nil once the result was delivered or the snapshot cancelled.
    private var onResult: ((Result<JSON, ResourceError>) -> Void)?
    private var listFetch: BatchedListFetch?
    private var items: [JSON] = []
    /// The answer as the details come in.
    private var merged = MergedItems(count: 0)
    /// For each item, the next item of the same id (-1: none): an id is asked once, tagged
    /// with its first item, and its details go to every item of the chain.
    private var nextOfSameID: [Int] = []
    /// The ids asked, while some are still awaited: withdrawn when it stops early.
    private var asked: [(id: String, tag: Int)] = []
    private var awaitedCount = 0
    private var loader: DetailBatchLoader?

    init(
        resource: ListResource, trace: TraceContext, progress: FirstDocumentProgress?, onResult: @escaping (Result<JSON, ResourceError>) -> Void
    ) {
        self.resource = resource
        self.trace = trace
        self.progress = progress
        self.onResult = onResult
    }

    func start() {
        let fetch = BatchedListFetch(fanOut: self)
        listFetch = fetch
        fetch.start()
    }

    func cancel() {
        onResult = nil
        progress?.stop()
        stop()
    }

    /// Cancels the list call, or withdraws the ids still awaited.
    private func stop() {
        listFetch?.cancel()
        listFetch = nil
        if awaitedCount > 0 { loader?.withdraw(asked.lazy.map(\.id), of: self) }
        awaitedCount = 0
        asked = []
        loader = nil
    }

    fileprivate func listEnded(_ result: Result<[JSON], ResourceError>) {
        listFetch = nil
        switch result {
        case .success(let items): listed(items)
        case .failure(let error): finish(.failure(error))
        }
    }

    /// Settles what it can at once (an item without a usable id, details in the cache), then
    /// asks for the other ids, each once.
    private func listed(_ items: [JSON]) {
        guard onResult != nil else { return }
        self.items = items
        merged = MergedItems(count: items.count)
        nextOfSameID = Array(repeating: -1, count: items.count)
        // By bytes (``ExactText``): two ids an upstream tells apart are two items to fetch.
        var firstOfID: [ExactText: Int] = [:]
        firstOfID.reserveCapacity(items.count)
        for index in items.indices {
            guard onResult != nil else { return }
            guard let id = ListResource.id(of: items[index], member: resource.definition.idMember) else {
                settle(index, .failure(resource.error(
                    .invalidItemID, resource.listPath, "an item of \(resource.listPath) has no usable `\(resource.definition.idMember)`")))
                continue
            }
            if resource.detailCache != nil, let call = resource.batchCall?.path(for: id), let details = resource.cachedDetails(at: call) {
                settle(index, resource.merged(items[index], withCachedDetails: details, path: call))
                continue
            }
            // One lookup: the first item of the id, or this one made the first.
            let first = Self.firstIndex(&firstOfID[ExactText(id), default: index])
            if first == index {
                asked.append((id, index))
            } else {
                nextOfSameID[index] = nextOfSameID[first]
                nextOfSameID[first] = index
            }
        }
        guard onResult != nil else { return }
        if !asked.isEmpty {
            let loader = resource.batchLoader()
            self.loader = loader
            awaitedCount = asked.count
            loader.ask(asked, for: self, trace: trace, revalidation: resource.revalidation)
        }
        finishIfSettled()
        if onResult != nil { progress?.listed { [unowned self] in partialDocument } }
    }

    /// The document so far, each item still waiting for its details marked.
    private var partialDocument: JSON {
        merged.partialDocument(listed: items, marker: resource.definition.pendingMember)
    }

    private static func firstIndex(_ index: inout Int) -> Int { index }

    func received(tag: Int, _ result: Result<JSON, ResourceError>) {
        guard onResult != nil, awaitedCount > 0 else { return }
        awaitedCount -= 1
        var index = tag
        while index >= 0, onResult != nil {
            switch result {
            case .success(let details):
                settle(index, merged(items[index], with: details))
            case .failure(let error):
                settle(index, .failure(error))
            }
            index = nextOfSameID[index]
        }
        finishIfSettled()
        if onResult != nil { progress?.settled { [weak self] in self?.partialDocument } }
    }

    /// `item` merged with its `details` from a batch answer.
    private func merged(_ item: JSON, with details: JSON) -> Result<JSON?, ResourceError> {
        guard let merged = ListResource.merge(item, details: details) else {
            let path = resource.batchCall?.abbreviated ?? resource.listPath
            let id = ListResource.id(of: item, member: resource.definition.idMember) ?? ""
            return .failure(resource.error(
                .upstreamMalformed, path,
                "upstream \(resource.upstream.name): GET \(path): expected an object for item \(id), found \(details.kindDescription)"))
        }
        return .success(merged)
    }

    /// Records item `index`'s outcome; an item failure that fails the snapshot finishes it.
    private func settle(_ index: Int, _ result: Result<JSON?, ResourceError>) {
        if let failure = merged.settle(index, result, item: items[index], policy: resource.definition.onItemFailure) {
            finish(.failure(failure))
        }
    }

    private func finishIfSettled() {
        guard onResult != nil, merged.isComplete else { return }
        finish(.success(merged.document))
    }

    /// Delivers the result once; ids still awaited (when an item fails the snapshot) are
    /// withdrawn first.
    private func finish(_ result: Result<JSON, ResourceError>) {
        guard let onResult else { return }
        self.onResult = nil
        progress?.stop()
        stop()
        onResult(result)
    }

    /// The items of the list in `document` (the list fetch's read).
    fileprivate func listedItems(in document: JSON) -> Result<[JSON], ResourceError> {
        resource.items(in: document)
    }
}

/// The list's fetch of a batched snapshot, reported to its fan-out.
private final class BatchedListFetch: JSONFetch<[JSON]> {
    /// Strong, as the fan-out holds the fetch: the two let go of each other when it ends.
    private let fanOut: BatchedFanOut

    init(fanOut: BatchedFanOut) {
        self.fanOut = fanOut
        super.init(
            upstream: fanOut.resource.upstream, path: fanOut.resource.listPath, headers: fanOut.resource.callHeaders, trace: fanOut.trace, call: "list",
            keeping: .objectsInsideTheDocument, revalidation: fanOut.resource.revalidation)
    }

    override func read(_ document: JSON) -> Result<[JSON], ResourceError> {
        fanOut.listedItems(in: document)
    }

    override func deliver(_ result: consuming Result<[JSON], ResourceError>) {
        fanOut.listEnded(result)
    }
}
