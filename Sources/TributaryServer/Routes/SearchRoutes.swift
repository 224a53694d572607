import Aggregation
import EventLoop
import HTTPServer

/// The endpoints of one `kind: search` resource named `name`:
///
/// - `GET /<name>?q=…`: the upstream's results for one query, as JSON (`[]` for short queries,
///   without an upstream call; ``JSONAnswers``: requests for the same query at the same time
///   share one search).
/// - `GET /<name>?q=…` with `Accept: text/event-stream`: a search session (``SearchView``)
///   whose input `q` the client sets with `PUT /streams/{id}/inputs/q`.
///
/// A query longer than ``SearchView/maximumQueryLength`` is refused (400), on either.
struct SearchRoutes {
    let resource: SearchResource
    let streams: EventStreamHub
    let scheduler: EventLoopScheduler
    let answers: JSONAnswers

    /// How a stream of the resource gets its view: a session of its own, searching the
    /// query parameter first.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(resource.definition)) { [self] parameters, trace in
            query(in: parameters).map { SearchView(resource, initialQuery: $0, scheduler: scheduler, trace: trace) }
        }
    }

    func register(in router: inout Router<Route>) {
        router.add(.get, "/\(resource.name)") { request in
            request.servesResource()
            if request.acceptsEventStream { return streams.open(request, resource: resource.name, views: liveViews) }
            if let refusal = EventUpdates.refusal(of: request) { return request.respond(refusal) }
            switch query(in: request.queryParameters) {
            case .success(let query): answers.answer(request, url: query) { resource.results(for: query, trace: request.traceContext) }
            case .failure(let error): request.respond(error)
            }
        }
    }

    /// The query in `parameters` (none is the empty query), or why it is refused.
    private func query(in parameters: [String: String]) -> Result<String, HTTPError> {
        let name = resource.definition.parameter
        let query = parameters[name] ?? ""
        guard query.unicodeScalars.count <= SearchView.maximumQueryLength else {
            return .failure(.badRequest("\(name) is longer than \(SearchView.maximumQueryLength) characters"))
        }
        return .success(query)
    }
}
