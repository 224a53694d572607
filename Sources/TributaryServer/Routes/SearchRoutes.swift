import Aggregation
import EventLoop
import HTTPServer

/// The endpoints of one `kind: search` resource named `name`, served at its `route`
/// (`/<name>` unless configured):
///
/// - `GET <route>?q=…`: the upstream's results for one query, as JSON (`[]` for short
///   queries, without an upstream call; ``JSONAnswers``: requests for the same query, the
///   same parameter values and identity at the same time share one search).
/// - `GET <route>?q=…` with `Accept: text/event-stream`: a search session (``SearchView``)
///   whose input `q` the client sets with `PUT /streams/{id}/inputs/q`.
///
/// A query longer than ``SearchView/maximumQueryLength`` is refused (400), on either; so are
/// parameters that fail their checks.
/// A class: its route handlers capture it, and a struct this size would be copied into
/// every request's closures.
final class SearchRoutes {
    let name: String
    let settings: Configuration.SearchSettings
    let upstream: Upstream
    let requests: ResourceRequestReader
    let streams: EventStreamHub
    let scheduler: EventLoopScheduler
    let answers: JSONAnswers
    /// Who may call it, and how often.
    let door: ResourceDoor

    init(
        name: String, settings: Configuration.SearchSettings, upstream: Upstream, requests: ResourceRequestReader,
        streams: EventStreamHub, scheduler: EventLoopScheduler, answers: JSONAnswers, door: ResourceDoor
    ) {
        self.name = name
        self.settings = settings
        self.upstream = upstream
        self.requests = requests
        self.streams = streams
        self.scheduler = scheduler
        self.answers = answers
        self.door = door
    }

    /// How a stream of the resource gets its view: a session of its own, searching the
    /// query parameter first.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(settings.definition), make: { [self] request, given, opener in
            let credential = opener.credential
            let asked = given.map { requests.read(request, given: $0, as: credential) } ?? requests.read(request, as: credential)
            return asked.flatMap { asked in
                query(in: given ?? request.queryParameters).map { query in
                    SearchView(resource(for: asked), initialQuery: query, scheduler: scheduler, trace: request.traceContext)
                }
            }
        }, varyingHeaders: requests.varyingHeaders)
    }

    func register(in router: inout Router<Route>) {
        router.add(.get, settings.routing.route) { [self] request in
            request.servesResource(varyingOn: requests.varyingHeaders)
            guard door.isOpen else { return door.admit(request) { [self] credential in serve(request, as: credential) } }
            serve(request, as: nil)
        }
    }

    /// `GET <route>` once admitted: a search session, or the JSON results.
    private func serve(_ request: ServerRequest, as credential: Credential?) {
        if request.acceptsEventStream { return streams.open(request, resource: name, views: liveViews, credential: credential) }
        if let refusal = EventUpdates.refusal(of: request) { return request.respond(refusal) }
        let asked: (request: ResourceRequest, query: String)
        switch requests.read(request, as: credential).flatMap({ asked in query(in: request.queryParameters).map { (asked, $0) } }) {
        case .success(let found): asked = found
        case .failure(let error): return request.respond(error)
        }
        // The query shapes the document as a parameter does: it is part of the run's key.
        var values = asked.request.parameters.dictionary
        values[settings.definition.parameter] = asked.query
        let key = SharingKey(resource: name, parameters: ParameterValues(values), identity: asked.request.caller.identity)
        answers.answer(request, key: key) { resource(for: asked.request).results(for: asked.query, trace: request.traceContext) }
    }

    /// The query in `parameters` (none is the empty query), or why it is refused.
    private func query(in parameters: [String: String]) -> Result<String, HTTPError> {
        let name = settings.definition.parameter
        let query = parameters[name] ?? ""
        guard query.unicodeScalars.count <= SearchView.maximumQueryLength else {
            return .failure(.badRequest("\(name) is longer than \(SearchView.maximumQueryLength) characters"))
        }
        return .success(query)
    }

    private func resource(for asked: ResourceRequest) -> SearchResource {
        SearchResource(name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller)
    }
}
