import EventLoop
import HTTPCore
import OpenCombine

extension ListResource {
    /// One snapshot as a publisher of concrete types: the list call, then every detail call
    /// (at most ``Definition/concurrency`` at a time), merged in list order (``ListFanOut``),
    /// each call a span of `trace`.
    ///
    /// It does what `upstream.json(list).flatMap { items.orderedFanOut { upstream.json(detail) } }`
    /// does, in one subscription. That chain runs in OpenCombine's and Rivers' generic code,
    /// which is not specialized across module boundaries: it looked up generic type metadata
    /// hundreds of times per request and allocated a subscription chain per item. Here every
    /// type is known to the compiler, and an item costs one object, its fetch (``JSONFetch``).
    ///
    /// Emits one document and finishes, or fails with the list's error (or an item's, under
    /// ``ItemFailurePolicy/fail``). Cancelling cancels every call in flight. Loop-confined.
    func snapshotPublisher(trace: TraceContext) -> OneResultPublisher<JSON, ResourceError> {
        OneResultPublisher { [self] finish in startFanOut(trace: trace, progress: nil, onResult: finish) }
    }

    /// Starts the fan-out of one snapshot, which tells `progress` (if any) of its partial
    /// documents as its items settle, and `onResult` of its one result.
    func startFanOut(
        trace: TraceContext, progress: FirstDocumentProgress?, onResult: @escaping (Result<JSON, ResourceError>) -> Void
    ) -> any Cancellable {
        let fanOut = ListFanOut(resource: self, trace: trace, progress: progress, onResult: onResult)
        fanOut.start()
        return fanOut
    }
}

/// The list call and the detail calls of one snapshot. A fetch may complete inside the call
/// that starts it (a refused call, an id that names no path), so starting is a loop that such
/// a completion re-enters only to record its result.
private final class ListFanOut: Cancellable {
    fileprivate let resource: ListResource
    fileprivate let trace: TraceContext
    /// Told of the partial documents of a progressive first document.
    private let progress: FirstDocumentProgress?
    /// Nil once the result was delivered or the snapshot cancelled: late completions are ignored.
    private var onResult: ((Result<JSON, ResourceError>) -> Void)?
    private var listFetch: ListFetch?
    fileprivate private(set) var items: [JSON] = []
    /// The answer as the details come in.
    private var merged = MergedItems(count: 0)
    /// The detail fetches in flight, by item index.
    private var fetches: [DetailFetch?] = []
    private var nextItem = 0
    private var inFlight = 0
    private var isStarting = false
    /// With revalidation: the serial of the kept answer each call read, the list's first,
    /// then each item's (``ListResource/lastDocument``); whether each was a `304`.
    private var answers: [UInt64?] = []
    private var unchangedCalls = 0

    init(
        resource: ListResource, trace: TraceContext, progress: FirstDocumentProgress?, onResult: @escaping (Result<JSON, ResourceError>) -> Void
    ) {
        self.resource = resource
        self.trace = trace
        self.progress = progress
        self.onResult = onResult
    }

    func start() {
        let fetch = ListFetch(fanOut: self)
        listFetch = fetch
        fetch.start()
    }

    fileprivate func listEnded(_ result: Result<[JSON], ResourceError>) {
        if resource.revalidation != nil, let listFetch { noteAnswer(of: listFetch, at: 0) }
        listFetch = nil
        switch result {
        case .success(let items): received(items)
        case .failure(let error): finish(.failure(error))
        }
    }

    func cancel() {
        onResult = nil
        progress?.stop()
        cancelFetches()
    }

    private func cancelFetches() {
        listFetch?.cancel()
        listFetch = nil
        let fetches = self.fetches
        self.fetches = []
        for fetch in fetches { fetch?.cancel() }
    }

    private func received(_ items: [JSON]) {
        guard onResult != nil else { return }
        self.items = items
        merged = MergedItems(count: items.count)
        fetches = Array(repeating: nil, count: items.count)
        startDetails()
        if onResult != nil { progress?.listed { [unowned self] in partialDocument } }
    }

    /// The document so far, each item still waiting for its details marked.
    private var partialDocument: JSON {
        merged.partialDocument(listed: items, marker: resource.definition.pendingMember)
    }

    /// Starts detail fetches up to the concurrency limit, then finishes once all have ended.
    private func startDetails() {
        guard !isStarting else { return }
        isStarting = true
        defer { isStarting = false }
        // At least one at a time: a definition built in code may say 0 (the configuration cannot).
        while onResult != nil, inFlight < max(1, resource.definition.concurrency), nextItem < items.count {
            let index = nextItem
            nextItem += 1
            inFlight += 1
            startDetail(index)
        }
        if onResult != nil, merged.isComplete { finish(.success(completeDocument())) }
    }

    private func startDetail(_ index: Int) {
        let item = items[index]
        guard let path = resource.detailPath(of: item) else {
            return detailEnded(index, .failure(resource.error(
                .invalidItemID, resource.listPath,
                "an item of \(resource.listPath) has no usable `\(resource.definition.idMember)`")))
        }
        var stale: StaleDetails?
        if resource.detailCache != nil {
            switch resource.cacheLookup(at: path) {
            case .fresh(let details): return detailEnded(index, resource.merged(item, withCachedDetails: details, path: path))
            case .stale(let details, let validators): stale = StaleDetails(details: details, validators: validators)
            case .missing: break
            }
        }
        let detail = DetailFetch(fanOut: self, index: index, item: item, path: path, stale: stale)
        fetches[index] = detail
        detail.start()
    }

    /// The items of the list in `document` (the ``ListFetch``'s read).
    fileprivate func listedItems(in document: JSON) -> Result<[JSON], ResourceError> {
        resource.items(in: document)
    }

    /// `item` merged with its details in `document` (a ``DetailFetch``'s read). Here, not in
    /// the fetch: read through another object, the resource was copied for the call (a retain
    /// and a release of each of its dozen references).
    fileprivate func merged(_ item: JSON, withDetailsFrom document: JSON, path: String, answer: AnswerHeaders) -> Result<JSON?, ResourceError> {
        resource.merged(item, withDetailsFrom: document, path: path, answer: answer)
    }

    /// `item` merged with its cached details, which a `304` with `answer`'s headers said are current.
    fileprivate func merged(_ item: JSON, withRevalidated details: JSON, path: String, answer: AnswerHeaders) -> Result<JSON?, ResourceError> {
        resource.refreshCachedDetails(at: path, answer: answer)
        return resource.merged(item, withCachedDetails: details, path: path)
    }

    /// `result` is handed over: its value moves into ``merged``.
    fileprivate func detailEnded(_ index: Int, _ result: consuming Result<JSON?, ResourceError>) {
        guard onResult != nil else { return }
        if resource.revalidation != nil, let fetch = fetches[index] { noteAnswer(of: fetch, at: index + 1) }
        fetches[index] = nil
        inFlight -= 1
        if let failure = merged.settle(index, consume result, item: items[index], policy: resource.definition.onItemFailure) {
            return finish(.failure(failure))
        }
        progress?.settled { [weak self] in self?.partialDocument }
        startDetails()
    }

    /// The document of a snapshot whose every item settled: for a resource that revalidates,
    /// its last document again when every call was a `304` (what they answered is what it
    /// was made of), else the merged one, recorded as the last.
    private func completeDocument() -> JSON {
        guard resource.revalidation != nil else { return merged.document }
        if unchangedCalls == items.count + 1, let last = resource.lastDocument, last.answers == answers {
            resource.reusedLastDocument = true
            return last.document
        }
        let document = merged.document
        resource.lastDocument = (document, answers)
        resource.reusedLastDocument = false
        return document
    }

    /// Notes which kept answer the call at `position` (0: the list) read, and whether it was a `304`.
    private func noteAnswer<Value>(of fetch: JSONFetch<Value>, at position: Int) {
        if answers.count <= position { answers += Array(repeating: nil, count: max(items.count + 1, position + 1) - answers.count) }
        if let serial = fetch.unchangedAnswer {
            answers[position] = serial
            unchangedCalls += 1
        } else {
            answers[position] = fetch.answerSerial
        }
    }

    /// Delivers the result once; fetches still in flight (the others, when an item fails the
    /// snapshot) are cancelled first.
    private func finish(_ result: Result<JSON, ResourceError>) {
        guard let onResult else { return }
        self.onResult = nil
        progress?.stop()
        cancelFetches()
        onResult(result)
    }
}

/// One item's detail fetch: the item merged with its details (its `read`), reported to the
/// fan-out. One object per item, the fetch itself, rather than a subscriber of a fetch
/// publisher, its subscription and closures for both ends for every item.
///
/// With a detail cache, the cache keeps the details with their validators (its answers are
/// not kept twice, as ``Revalidation`` would): an expired entry's validators go with the
/// call, and a `304` merges the cached details.
private final class DetailFetch: JSONFetch<JSON?> {
    /// Strong, as the fan-out holds the fetch: the two let go of each other when it ends.
    private let fanOut: ListFanOut
    private let index: Int
    /// The item, the copy its path was read from, moved here: a constant of the fetch is lent
    /// to the merge as it is, where `items[index]` of the fan-out was copied for each read.
    private let item: JSON
    /// The expired cached details it revalidates, and their validators.
    private let stale: StaleDetails?

    init(fanOut: ListFanOut, index: Int, item: consuming JSON, path: String, stale: StaleDetails?) {
        self.fanOut = fanOut
        self.index = index
        self.item = item
        self.stale = stale
        let caches = fanOut.resource.detailCache != nil
        super.init(
            upstream: fanOut.resource.upstream, path: path, headers: fanOut.resource.callHeaders, trace: fanOut.trace, call: "detail", keeping: .objects,
            revalidation: caches ? nil : fanOut.resource.revalidation, keepingAnswerHeaders: caches)
    }

    override func validatorsToSend() -> Validators? {
        stale?.validators ?? super.validatorsToSend()
    }

    override func notModified() -> Result<JSON?, ResourceError> {
        guard let stale else { return super.notModified() }
        return fanOut.merged(item, withRevalidated: stale.details, path: path, answer: answered)
    }

    override func read(_ document: JSON) -> Result<JSON?, ResourceError> {
        fanOut.merged(item, withDetailsFrom: document, path: path, answer: answered)
    }

    override func deliver(_ result: consuming Result<JSON?, ResourceError>) {
        fanOut.detailEnded(index, result)
    }
}

/// The list's fetch: the items of the list (its `read`), reported to the fan-out.
private final class ListFetch: JSONFetch<[JSON]> {
    /// Strong, as the fan-out holds the fetch: the two let go of each other when it ends.
    private let fanOut: ListFanOut

    init(fanOut: ListFanOut) {
        self.fanOut = fanOut
        // Its items are all read: the document's own object is parsed, its items kept as text.
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

/// Expired details of the detail cache that a fetch revalidates: the details a `304` keeps,
/// and the validators asked with. A class: a fetch holds one reference, nil but for these.
private final class StaleDetails {
    let details: JSON
    let validators: Validators

    init(details: JSON, validators: Validators) {
        self.details = details
        self.validators = validators
    }
}
