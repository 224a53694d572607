import Aggregation
import EventLoop
import HTTPCore
import HTTPServer
import OpenCombine
import TributaryConfiguration

/// `kind: list` (e.g. `/groups`): a list plus each item's details. A JSON GET runs the
/// snapshot for its parameter values and identity; a stream follows the process's shared
/// pipeline of that key (``WorkerPipelines``); `POST /<name>/reload` refreshes every
/// pipeline of the resource whose parameter values hold those given, here or through the fleet.
struct ListKind: ServedKind {
    let name: String
    let settings: Configuration.ListSettings
    let definition: Configuration.ResourceDefinition
    let upstream: Upstream
    let pipelines: WorkerPipelines
    /// What its snapshots share about details: the worker's batch windows, the detail cache.
    let details: DetailSharing?
    let reload: (@Sendable (ParameterValues) -> Int)?
    /// The resource as every request without parameters or identity asks for it, made once.
    private let everyone: ListResource
    /// The resources made for other keys lately, the next request of the same key reuses.
    private let recent = RecentListResources()

    init(
        name: String, settings: Configuration.ListSettings, definition: Configuration.ResourceDefinition, upstream: Upstream,
        pipelines: WorkerPipelines, details: DetailSharing?, reload: @escaping @Sendable (ParameterValues) -> Int
    ) {
        self.name = name
        self.settings = settings
        self.definition = definition
        self.upstream = upstream
        self.pipelines = pipelines
        self.details = details
        self.reload = reload
        everyone = ListResource(name: name, upstream: upstream, definition: settings.definition, sharing: details)
    }

    var diff: JSONDiff { PatchIdentity.diff(settings.definition) }

    func asking(_ asked: ResourceRequest, of request: ServerRequest, given: [String: String]?) -> Result<ResourceRequest, HTTPError> {
        .success(asked)
    }

    func key(of asked: ResourceRequest) -> SharingKey { asked.key }

    func document(for asked: ResourceRequest, trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        resource(for: asked).snapshot(trace: trace)
    }

    func view(for asked: ResourceRequest, of request: ServerRequest, opener: StreamOpener) -> Result<any LiveViewModel, HTTPError> {
        pipelines.view(
            for: asked, definition: definition, refreshInterval: settings.refreshInterval, maxPipelines: settings.maxLivePipelines,
            client: opener.client)
    }

    /// The resource for what `asked` names: the one made once, when it names nothing; else
    /// one of the recent ones, by the request's sharing key.
    private func resource(for asked: ResourceRequest) -> ListResource {
        guard !asked.parameters.isEmpty || !asked.caller.forwardedHeaders.isEmpty else { return everyone }
        return recent.resource(for: asked.key) {
            ListResource(
                name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller,
                sharing: details)
        }
    }
}

/// A worker's one-shot list resources for the keys asked lately (at most ``capacity``, the
/// least recently asked forgotten first). Making one renders its list and detail paths and
/// its call headers, some 4,000 instructions and a dozen allocations on every request of a
/// parameterized route or a forwarded identity (issue 41); a key asked again finds it made.
///
/// Keyed by the ``SharingKey``, parameter values by their bytes and the caller's identity
/// included, as everything shared is: a resource holds its caller's forwarded headers, and
/// reaches no one else. A one-shot resource keeps no state between snapshots (only a live
/// pipeline's revalidates and keeps its last document, and those are made elsewhere), so two
/// requests may share one. Loop-confined, as its worker's routes are.
final class RecentListResources {
    static let capacity = 256
    private var resources = RecencyTable<SharingKey, ListResource>(capacity: RecentListResources.capacity)

    func resource(for key: SharingKey, making make: () -> ListResource) -> ListResource {
        if let known = resources[key] { return known }
        let made = make()
        resources[key] = made
        return made
    }
}

/// `kind: pages` (e.g. `/rows`): a list, each item with its paginated sub-list. A JSON GET
/// answers every row with its first page; a stream has a view of its own (``RowsView``),
/// with the triggers `loadMore` (`?topic=<id>`: that row's next page) and `reload`;
/// `POST /<name>/reload` reloads every live stream of the resource opened with the parameter
/// values given (all, for none), on every worker (and in a fleet on every replica).
struct PagesKind: ServedKind {
    let name: String
    let settings: Configuration.PagesSettings
    let upstream: Upstream
    let reload: (@Sendable (ParameterValues) -> Int)?

    var diff: JSONDiff { PatchIdentity.diff(settings.definition) }

    func asking(_ asked: ResourceRequest, of request: ServerRequest, given: [String: String]?) -> Result<ResourceRequest, HTTPError> {
        .success(asked)
    }

    func key(of asked: ResourceRequest) -> SharingKey { asked.key }

    func document(for asked: ResourceRequest, trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        resource(for: asked).firstPages(trace: trace)
    }

    func view(for asked: ResourceRequest, of request: ServerRequest, opener: StreamOpener) -> Result<any LiveViewModel, HTTPError> {
        .success(RowsView(resource(for: asked, revalidates: true), argument: settings.loadMoreArgument, trace: request.traceContext).keeping(asked.fields))
    }

    /// The resource for what `asked` names; a live view's `revalidates` (a JSON answer asks plainly).
    private func resource(for asked: ResourceRequest, revalidates: Bool = false) -> PagedListResource {
        PagedListResource(
            name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller,
            revalidates: revalidates)
    }
}

/// `kind: search` (e.g. `/search?q=…`): the upstream's results for one query. A JSON GET
/// answers one query (`[]` for short ones, without an upstream call; the query is part of
/// its run's key, as a parameter is); a stream is a search session (``SearchView``) whose
/// input `q` the client sets with `PUT /streams/{id}/inputs/q`. A query longer than
/// ``SearchView/maximumQueryLength`` is refused (400), on either.
struct SearchKind: ServedKind {
    let name: String
    let settings: Configuration.SearchSettings
    let upstream: Upstream
    let scheduler: EventLoopScheduler
    var reload: (@Sendable (ParameterValues) -> Int)? { nil }

    var diff: JSONDiff { PatchIdentity.diff(settings.definition) }

    func asking(
        _ asked: ResourceRequest, of request: ServerRequest, given: [String: String]?
    ) -> Result<(request: ResourceRequest, query: String), HTTPError> {
        let name = settings.definition.parameter
        let query = (given ?? request.queryParameters)[name] ?? ""
        guard query.unicodeScalars.count <= SearchView.maximumQueryLength else {
            return .failure(.badRequest("\(name) is longer than \(SearchView.maximumQueryLength) characters"))
        }
        return .success((asked, query))
    }

    func key(of asked: (request: ResourceRequest, query: String)) -> SharingKey {
        var values = asked.request.parameters.dictionary
        values[settings.definition.parameter] = asked.query
        return SharingKey(resource: name, parameters: ParameterValues(values), identity: asked.request.caller.identity)
    }

    func document(for asked: (request: ResourceRequest, query: String), trace: TraceContext) -> AnyPublisher<JSON, ResourceError> {
        resource(for: asked.request).results(for: asked.query, trace: trace)
    }

    func view(
        for asked: (request: ResourceRequest, query: String), of request: ServerRequest, opener: StreamOpener
    ) -> Result<any LiveViewModel, HTTPError> {
        .success(SearchView(resource(for: asked.request), initialQuery: asked.query, scheduler: scheduler, trace: request.traceContext)
            .keeping(asked.request.fields))
    }

    private func resource(for asked: ResourceRequest) -> SearchResource {
        SearchResource(name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller)
    }
}
