public import HTTPCore
public import OpenCombine

/// A list from one upstream call, each item merged with its details from a second call per
/// item, in list order: `GET /groups` + `GET /groups/{id}/metadata` for every group.
///
/// ```
/// GET /groups ─▶ [a, b, c] ─┬─▶ GET /groups/a/metadata ─┐
///                           ├─▶ GET /groups/b/metadata ─┼─▶ [a+meta, b+meta, c+meta]
///                           └─▶ GET /groups/c/metadata ─┘   (list order, whatever answers first)
/// ```
///
/// Details are fetched concurrently, at most ``Definition/concurrency`` at a time. An item
/// whose details fail follows ``ItemFailurePolicy``. Cancelling the snapshot cancels every
/// call still in flight. With ``Definition/batch`` the details come from the upstream's batch
/// endpoint instead, a call for up to `max` items (``batchedSnapshotPublisher(trace:)``), the
/// same document byte for byte; with ``Definition/cacheFor`` details fetched recently are reused.
///
/// A class: a request's pipeline, its fan-out and every fetch hold the resource, and a copy
/// of a value this size costs a retain of each of its references.
public final class ListResource {
    /// What to call and where the data sits, as configured.
    public struct Definition: Sendable, Equatable {
        /// The list call, e.g. `/groups` or `/teams/{team}/groups?status={status}`.
        public var listPath: UpstreamPath
        /// Where the array of items is in the list response, e.g. `result`.
        public var itemsAt: JSONPath
        /// The member of each item that is its id, e.g. `id`.
        public var idMember: String
        /// The per-item call, e.g. `/groups/{id}/metadata`: `{id}` once, and any of the
        /// resource's parameters. Nil only with ``batch``, which replaces it.
        public var detailPath: UpstreamPath?
        /// Where the item's details are in that response (an object merged into the item).
        public var detailAt: JSONPath
        /// Detail calls (or batch calls) in flight at once for one snapshot.
        public var concurrency: Int
        public var onItemFailure: ItemFailurePolicy
        /// The batch form of the detail call, used instead of ``detailPath`` when set:
        /// ⌈N/max⌉ calls for N items (``DetailBatch``).
        public var batch: DetailBatch?
        /// How long the ids of concurrent snapshots wait to share batch calls (zero: each
        /// snapshot's ids go out at once, in calls of their own). See ``BatchWindows``.
        public var batchWindow: Duration
        /// How long fetched details are reused across snapshots (zero: not kept). See ``DetailCache``.
        public var cacheFor: Duration
        /// Whether the details' upstream answers say how long they are fresh instead
        /// (`details.cacheFor: upstream`, ``DetailFreshness/upstream``).
        public var cacheFollowsUpstream = false
        /// The bytes the process's ``DetailCache`` of the resource may hold.
        public var cacheBytes: Int
        /// The member that marks an item still waiting for its details in a progressive first
        /// document (``progressiveSnapshot(trace:loop:window:)``), `"pending": true`.
        public var pendingMember: String

        public init(
            listPath: UpstreamPath, itemsAt: JSONPath, idMember: String, detailPath: UpstreamPath?, detailAt: JSONPath,
            concurrency: Int, onItemFailure: ItemFailurePolicy, batch: DetailBatch? = nil, batchWindow: Duration = .zero,
            cacheFor: Duration = .zero, cacheBytes: Int = 32 * 1024 * 1024, pendingMember: String = "pending"
        ) {
            self.listPath = listPath
            self.itemsAt = itemsAt
            self.idMember = idMember
            self.detailPath = detailPath
            self.detailAt = detailAt
            self.concurrency = concurrency
            self.onItemFailure = onItemFailure
            self.batch = batch
            self.batchWindow = batchWindow
            self.cacheFor = cacheFor
            self.cacheBytes = cacheBytes
            self.pendingMember = pendingMember
        }

        /// How long its cached details are fresh (`details.cacheFor`): ``cacheFor``, or as their
        /// upstream answers say. Two stored fields rather than the enum, so that code building a
        /// definition with a duration goes on doing so.
        public var detailFreshness: DetailFreshness {
            get { cacheFollowsUpstream ? .upstream : .fixed(cacheFor) }
            set {
                switch newValue {
                case .upstream: (cacheFollowsUpstream, cacheFor) = (true, .zero)
                case .fixed(let duration): (cacheFollowsUpstream, cacheFor) = (false, duration)
                }
            }
        }
    }

    /// What an item whose details fail becomes.
    public enum ItemFailurePolicy: String, Sendable, CaseIterable {
        /// Kept in place, with an `error` member `{"code","message"}` instead of details.
        case mark
        /// Left out of the list.
        case drop
        /// The whole snapshot fails with the item's error.
        case fail
    }

    public let name: String
    public let upstream: Upstream
    public let definition: Definition
    /// The list call for the parameter values it was made for, e.g. `/teams/core/groups?status=open`.
    public let listPath: String
    /// The detail call for those values, each item's id going into `{id}`; nil when batched.
    let detailTemplate: PathTemplate?
    /// The batch call for those values, its ids to be added; nil unless batched.
    let batchCall: BatchCallPath?
    /// What every call of it carries: the upstream's own headers and those forwarded for
    /// its caller.
    let callHeaders: UpstreamHeaders
    /// Whose details it fetches: what the detail cache and the batch windows key them by.
    let identity: Identity
    /// What its snapshots share beyond themselves: batch windows, the detail cache, counters.
    let sharing: DetailSharing?
    /// The process's cache of its details (`details.cacheFor`), if any.
    let detailCache: DetailCache?
    /// How its calls ask whether their earlier answers changed: for a live pipeline's
    /// resource of an upstream that revalidates, nil otherwise (a one-shot answer asks plainly).
    let revalidation: Revalidation?
    /// Its last complete document, while it revalidates, and the serials of the kept answers
    /// it was made of (the list's, then each item's; nil for one not kept). A snapshot whose
    /// every call was a `304` reading those very answers is that document again, the very
    /// value, not rebuilt from its parts (no merge, no serializing, and the live pipeline sees
    /// at once that nothing changed). Loop-confined, as a live pipeline is.
    var lastDocument: (document: JSON, answers: [UInt64?])?
    /// Whether its latest complete snapshot was ``lastDocument`` again.
    public internal(set) var reusedLastDocument = false

    /// The resource for `parameters` (its values already checked), fetched for `caller`: the
    /// paths of its calls are made here, once, not per call. `sharing` is what its snapshots
    /// share with others of the resource (made once per resource, not per request). A live
    /// pipeline's resource `revalidates`: each refresh's calls send the validators of the
    /// answers before (``Revalidation``).
    public init(
        name: String, upstream: Upstream, definition: Definition, parameters: ParameterValues = .none, caller: Caller = .anonymous,
        sharing: DetailSharing? = nil, revalidates: Bool = false
    ) {
        self.name = name
        self.upstream = upstream
        self.definition = definition
        listPath = definition.listPath.rendered(with: parameters)
        if let batch = definition.batch {
            batchCall = BatchCallPath(batch, parameters: parameters)
            detailTemplate = nil
        } else {
            guard let template = definition.detailPath?.template(with: parameters) else {
                preconditionFailure("details.path \(definition.detailPath.map(String.init(describing:)) ?? "(none)") must hold {id} once (the configuration checks it)")
            }
            batchCall = nil
            detailTemplate = template
        }
        callHeaders = upstream.headers(for: caller)
        identity = caller.identity
        revalidation = revalidates ? Revalidation(of: upstream, for: caller.identity) : nil
        self.sharing = sharing ?? (definition.batch == nil ? nil : DetailSharing(resource: name, definition: definition))
        detailCache = sharing?.cache
    }

    /// One snapshot: the list, each item merged with its details, in list order
    /// (``snapshotPublisher(trace:)``, or ``batchedSnapshotPublisher(trace:)`` with
    /// `details.batch`). Every call, the list's and each detail or batch call, goes out as a span of
    /// `trace`.
    public func snapshot(trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        guard batchCall == nil else { return batchedSnapshotPublisher(trace: trace).eraseToAnyPublisher() }
        return snapshotPublisher(trace: trace).eraseToAnyPublisher()
    }

    func items(in list: JSON) -> Result<[JSON], ResourceError> {
        guard let items = definition.itemsAt.value(in: list)?.arrayValue else {
            let found = definition.itemsAt.value(in: list)?.kindDescription ?? "nothing"
            return .failure(error(.upstreamMalformed, listPath,
                                  "upstream \(upstream.name): GET \(listPath): expected an array at \(definition.itemsAt), found \(found)"))
        }
        return .success(items)
    }

    func detailPath(of item: JSON) -> String? {
        guard let template = detailTemplate else { return nil }
        // An id kept in the item's text becomes the path from its bytes, without a `String`.
        // (A closure, not `template.path(forID:)`: a method of a value, partially applied,
        // boxes a copy of the value.)
        if case .raw(let text) = item, let path = text.withStringMember(named: definition.idMember, { template.path(forID: $0) }) {
            return path
        }
        return switch item[definition.idMember] {
        case .string(let id): template.path(for: id)
        case .number(let id): template.path(for: id)
        default: nil
        }
    }

    /// The id of `item`, the text of its `member` (a string, or a number as written); nil
    /// when it has none, or an empty one. Batched details are matched back by it.
    static func id(of item: JSON, member: String) -> String? {
        if case .raw(let text) = item, let id = text.withStringMember(named: member, { String(decoding: $0, as: UTF8.self) }) {
            return id.isEmpty ? nil : id
        }
        return switch item[member] {
        case .string(let id): id.isEmpty ? nil : id
        case .number(let id): id
        default: nil
        }
    }

    /// `item` merged with its details in `document`, the answer of `path` (with `answer`'s
    /// headers, which the detail cache reads).
    func merged(_ item: JSON, withDetailsFrom document: JSON, path: String, answer: AnswerHeaders = AnswerHeaders()) -> Result<JSON?, ResourceError> {
        if let detailCache { keepDetails(from: document, path: path, answer: answer, in: detailCache) }
        // What ``merge(_:details:)`` splices when both texts are kept and share no name, found
        // without a `JSON` for the details on the way (two lookups and copies per item), and
        // the details' text read once, by the walk that compares the names.
        if case .raw(let itemText) = item, let (container, start) = definition.detailAt.keptObjectStart(in: document),
           let spliced = itemText.splicingObjectSharingNoName(at: start, of: container) {
            return .success(spliced)
        }
        guard let details = definition.detailAt.value(in: document), let merged = Self.merge(item, details: details) else {
            let found = definition.detailAt.value(in: document)?.kindDescription ?? "nothing"
            return .failure(error(.upstreamMalformed, path,
                                  "upstream \(upstream.name): GET \(path): expected an object at \(definition.detailAt), found \(found)"))
        }
        return .success(merged)
    }

    /// An item merged with its details: the item's members in order, then the details'
    /// members it does not have (the list's values win); nil unless both are objects.
    ///
    /// When both came with their text (``JSON/raw(_:)``, as the fetches parse them) and no
    /// detail member is dropped, the merged text is the two texts spliced, `{item…,detail…}`:
    /// the answer then copies it instead of serializing every member again.
    public static func merge(_ item: JSON, details: JSON) -> JSON? {
        // Texts kept without their members (as fetches parse them) are compared by name in
        // place: building both objects' members only to compare names cost more than the rest.
        if case .raw(let itemText) = item, case .raw(let detailText) = details,
           itemText.sharesMemberName(with: detailText) == false {
            return spliced(itemText, detailText)
        }
        guard let members = item.objectValue, let extra = details.objectValue else { return nil }
        // An item has a few members: scanning them beats hashing every key into a set, which
        // cost an array, a set and a hash per key for every item of every answer.
        if members.count <= 16 {
            if case .raw(let itemText) = item, case .raw(let detailText) = details,
               !extra.contains(where: { detail in members.contains { $0.key == detail.key } }) {
                return spliced(itemText, detailText)
            }
            return .object(members + extra.filter { detail in !members.contains { $0.key == detail.key } })
        }
        let known = Set(members.map(\.key))
        if case .raw(let itemText) = item, case .raw(let detailText) = details, !extra.contains(where: { known.contains($0.key) }) {
            return spliced(itemText, detailText)
        }
        return .object(members + extra.filter { !known.contains($0.key) })
    }

    /// `{item…,detail…}`: the texts of an item and of its details (which add only new
    /// members), spliced.
    private static func spliced(_ item: RawJSON, _ details: RawJSON) -> JSON {
        if details.textCount == 2 { return .raw(item) }
        if item.textCount == 2 { return .raw(details) }
        return RawJSON(splicedText: RawJSON.splicing(item, details)).map(JSON.raw) ?? .object(item.members + details.members)
    }

    /// The details kept in the cache for the detail call `path`, if fresh (counted as a hit).
    func cachedDetails(at path: String) -> JSON? {
        guard case .fresh(let details) = cacheLookup(at: path) else { return nil }
        return details
    }

    /// What the cache holds for the detail call `path`: fresh details (counted as a hit), or
    /// expired ones to revalidate when the upstream revalidates (else as missing).
    func cacheLookup(at path: String) -> DetailCache.Lookup {
        guard let detailCache else { return .missing }
        switch detailCache.lookup(DetailCache.Key(identity: identity, call: path)) {
        case .fresh(let details):
            sharing?.cacheHits?.increment()
            return .fresh(details)
        case .stale(let details, let validators):
            return upstream.policy.revalidate ? .stale(details, validators) : .missing
        case .missing:
            return .missing
        }
    }

    /// The cached details of `path` are current again: a `304` with `answer`'s headers.
    func refreshCachedDetails(at path: String, answer: AnswerHeaders) {
        detailCache?.refresh(DetailCache.Key(identity: identity, call: path), with: answer)
    }

    /// `item` merged with details from the cache (kept only when they were an object).
    func merged(_ item: JSON, withCachedDetails details: JSON, path: String) -> Result<JSON?, ResourceError> {
        guard let merged = Self.merge(item, details: details) else {
            return .failure(error(.upstreamMalformed, path, "upstream \(upstream.name): GET \(path): expected an object, found \(details.kindDescription)"))
        }
        return .success(merged)
    }

    /// Keeps the details in a detail answer, when they are an object, as its headers allow.
    private func keepDetails(from document: JSON, path: String, answer: AnswerHeaders, in cache: DetailCache) {
        guard let details = definition.detailAt.value(in: document), details.isObject else { return }
        cache.keep(DetailCache.compact(details), for: DetailCache.Key(identity: identity, call: path), answer: answer)
    }

    func error(_ code: ResourceError.Code, _ path: String, _ message: String) -> ResourceError {
        ResourceError(code: code, upstream: upstream.name, path: path, message: message)
    }

    /// `item` with an `error` member describing why its details are missing.
    /// `item` as a progressive first document shows it before its details came: its listed
    /// members and `marker: true`.
    static func pending(_ item: JSON, marker: String) -> JSON {
        guard let members = item.objectValue else { return .object([("item", item), (marker, .bool(true))]) }
        return .object(members.filter { $0.key != marker } + [(marker, .bool(true))])
    }

    static func marked(_ item: JSON, with error: ResourceError) -> JSON {
        let description = JSON.object([("code", .string(error.code.rawValue)), ("message", .string(error.message))])
        guard let members = item.objectValue else { return .object([("item", item), ("error", description)]) }
        return .object(members.filter { $0.key != "error" } + [("error", description)])
    }
}
