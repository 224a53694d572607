public import HTTPCore
public import OpenCombine
public import Rivers

/// A list from one upstream call, each item with its paginated sub-list: the topics of a
/// home page, each with its medias loaded page by page.
///
/// ```
/// GET /topics ─▶ [t1, t2] ─┬─▶ GET /topics/t1/medias ─▶ page 1 ··loadMore(t1)··▶ ?page=2 ─▶ …
///                          └─▶ GET /topics/t2/medias ─▶ page 1
///                                       accumulateLatest ─▶ [{topic:t1, medias:[…]}, {topic:t2, medias:[…]}]
/// ```
///
/// Rows keep list order. A row whose pages fail keeps what it loaded, marked with the error;
/// the other rows stay as they are.
public struct PagedListResource {
    public struct Definition: Sendable, Equatable {
        /// The list call and where its items and their ids are.
        public var listPath: UpstreamPath
        public var itemsAt: JSONPath
        public var idMember: String
        /// The page call of one item, e.g. `/topics/{id}/medias`; the cursor goes in
        /// ``cursorParameter`` (absent for the first page).
        public var pagePath: UpstreamPath
        public var pageItemsAt: JSONPath
        /// Where the next page's cursor is in a page (`null` or missing: the last page).
        public var cursorAt: JSONPath
        public var cursorParameter: String
        /// The members of each row: the item, and its items loaded so far.
        public var rowItemKey: String
        public var rowPagesKey: String
        /// First pages in flight at once for a JSON answer.
        public var concurrency: Int

        public init(
            listPath: UpstreamPath, itemsAt: JSONPath, idMember: String, pagePath: UpstreamPath, pageItemsAt: JSONPath,
            cursorAt: JSONPath, cursorParameter: String, rowItemKey: String, rowPagesKey: String, concurrency: Int
        ) {
            self.listPath = listPath
            self.itemsAt = itemsAt
            self.idMember = idMember
            self.pagePath = pagePath
            self.pageItemsAt = pageItemsAt
            self.cursorAt = cursorAt
            self.cursorParameter = cursorParameter
            self.rowItemKey = rowItemKey
            self.rowPagesKey = rowPagesKey
            self.concurrency = concurrency
        }
    }

    public let name: String
    public let upstream: Upstream
    public let definition: Definition

    /// The list call for the parameter values it was made for.
    public let listPath: String
    /// The page call of an item for those values, its id going into `{id}`.
    private let pageTemplate: PathTemplate
    /// The upstream's headers and those forwarded for its caller.
    private let callHeaders: UpstreamHeaders
    /// How a live view's calls ask whether their earlier answers changed; nil for a JSON answer.
    private let revalidation: Revalidation?

    /// The resource for `parameters` (already checked), fetched for `caller`. A live view's
    /// resource `revalidates`: its calls, repeated on a reload, send the validators of their
    /// earlier answers (``Revalidation``).
    public init(
        name: String, upstream: Upstream, definition: Definition, parameters: ParameterValues = .none, caller: Caller = .anonymous,
        revalidates: Bool = false
    ) {
        self.name = name
        self.upstream = upstream
        self.definition = definition
        listPath = definition.listPath.rendered(with: parameters)
        guard let template = definition.pagePath.template(with: parameters) else {
            preconditionFailure("pages.path \(definition.pagePath) must hold {id} once (the configuration checks it)")
        }
        pageTemplate = template
        callHeaders = upstream.headers(for: caller)
        revalidation = revalidates ? Revalidation(of: upstream, for: caller.identity) : nil
    }

    /// Every row with its first page (the JSON answer); every call a span of `trace`.
    public func firstPages(trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        items(trace: trace)
            .flatMap { items in
                items.orderedFanOut(maxConcurrent: definition.concurrency) { item in
                    page(of: item, at: nil, trace: trace).asResult().map { Row(item: item).applying($0.map(\.items)).json(definition) }
                }
            }
            .map(JSON.array)
            .eraseToAnyPublisher()
    }

    /// Every row with the pages loaded so far, loading an item's next page each time
    /// `loadMore` is activated for its id (a no-op after its last page, or while a page loads).
    ///
    /// `knownIDs` is told the ids of the items each time the list arrives; `pageLoaded`, an
    /// item's id each time one of its pages arrived (or failed): only from then on does its
    /// `loadMore` load a page, so a caller can refuse one that would do nothing. Every call,
    /// later pages included, goes out as a span of `trace`: the stream's, which its request began.
    public func rows(
        loadingMoreOn loadMore: Trigger, trace: TraceContext, knownIDs: @escaping (Set<String>) -> Void = { _ in },
        pageLoaded: @escaping (String) -> Void = { _ in }
    ) -> AnyPublisher<JSON, ResourceError> {
        items(trace: trace)
            .handleEvents(receiveOutput: { items in knownIDs(Set(items.compactMap(id(of:)))) })
            .flatMap { items in
                items.map { item in
                    Publishers.paginated(
                        firstPage: page(of: item, at: nil, trace: trace),
                        nextPage: { cursor in page(of: item, at: cursor, trace: trace) },
                        loadingNextOn: loadMore.signal(activatedBy: LoadMore(id: id(of: item) ?? "")))
                    .asResult()
                    .handleEvents(receiveOutput: { _ in if let id = id(of: item) { pageLoaded(id) } })
                    .scan(Row(item: item)) { row, result in row.applying(result) }
                    .map { row in row.json(definition) }
                }
                .accumulateLatest()
                .map(JSON.array)
                .setFailureType(to: ResourceError.self)
            }
            .eraseToAnyPublisher()
    }

    /// The id `loadMore` is activated with for an item's next page.
    /// Which row to load more of: by its id's bytes (``ExactText``), so that `K` never loads
    /// the row of the Kelvin sign.
    public struct LoadMore: Hashable, Sendable {
        public let id: String
        public init(id: String) { self.id = id }

        public static func == (lhs: LoadMore, rhs: LoadMore) -> Bool { ExactText(lhs.id) == ExactText(rhs.id) }
        public func hash(into hasher: inout Hasher) { ExactText.hash(id, into: &hasher) }
    }

    // MARK: - Calls

    private func items(trace: TraceContext) -> Upstream.FetchJSON<[JSON]> {
        upstream.json(listPath, headers: callHeaders, trace: trace, call: "list", revalidation: revalidation) { [listPath] list in
            guard let items = definition.itemsAt.value(in: list)?.arrayValue else {
                let found = definition.itemsAt.value(in: list)?.kindDescription ?? "nothing"
                return .failure(malformed(listPath, "expected an array at \(definition.itemsAt), found \(found)"))
            }
            return .success(items)
        }
    }

    private func page(of item: JSON, at cursor: String?, trace: TraceContext) -> AnyPublisher<Page<JSON, String>, ResourceError> {
        guard let id = id(of: item), let base = pageTemplate.path(for: id) else {
            return Fail(error: ResourceError(code: .invalidItemID, upstream: upstream.name, path: listPath,
                                             message: "an item of \(listPath) has no usable `\(definition.idMember)`"))
                .eraseToAnyPublisher()
        }
        // The template may hold a query of its own (`/topics/{id}/medias?size=20`): the cursor
        // then follows it. The id, percent-encoded, holds no `?`.
        let separator = base.contains("?") ? "&" : "?"
        let path = cursor.map { base + separator + definition.cursorParameter + "=" + QueryString.percentEncoded($0) } ?? base
        return upstream.json(path, headers: callHeaders, trace: trace, call: "page", revalidation: revalidation) { document in
            guard let items = definition.pageItemsAt.value(in: document)?.arrayValue else {
                let found = definition.pageItemsAt.value(in: document)?.kindDescription ?? "nothing"
                return .failure(malformed(path, "expected an array at \(definition.pageItemsAt), found \(found)"))
            }
            let next: String? = switch definition.cursorAt.value(in: document) {
            case .string(let cursor): cursor
            case .number(let cursor): cursor
            default: nil
            }
            return .success(Page(items: items, next: next))
        }
        .eraseToAnyPublisher()
    }

    private func id(of item: JSON) -> String? {
        switch item[definition.idMember] {
        case .string(let id), .number(let id): id
        default: nil
        }
    }

    private func malformed(_ path: String, _ problem: String) -> ResourceError {
        ResourceError(code: .upstreamMalformed, upstream: upstream.name, path: path, message: "upstream \(upstream.name): GET \(path): \(problem)")
    }

    /// One row: the item, its items loaded so far, and the error of its last page if it failed.
    struct Row {
        let item: JSON
        var pages: [JSON] = []
        var error: ResourceError?

        func applying(_ result: Result<[JSON], ResourceError>) -> Row {
            var row = self
            switch result {
            case .success(let pages): row.pages = pages
            case .failure(let error): row.error = error
            }
            return row
        }

        func json(_ definition: Definition) -> JSON {
            var members: [(key: String, value: JSON)] = [(definition.rowItemKey, item), (definition.rowPagesKey, .array(pages))]
            if let error {
                members.append(("error", .object([("code", .string(error.code.rawValue)), ("message", .string(error.message))])))
            }
            return .object(members)
        }
    }
}
