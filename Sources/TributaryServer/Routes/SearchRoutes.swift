import Aggregation
import Libevent

/// The endpoints of one `kind: search` resource named `name`:
///
/// - `GET /<name>?q=…`: the upstream's results for one query, as JSON (`[]` for short queries,
///   without an upstream call).
/// - `GET /<name>?q=…` with `Accept: text/event-stream`: a search session (``SearchView``)
///   whose input `q` the client sets with `PUT /streams/{id}/inputs/q`.
struct SearchRoutes {
    let resource: SearchResource
    let streams: EventStreamHub
    let scheduler: EventLoopScheduler

    func register(in router: inout Router<Route>) {
        router.add(.get, "/\(resource.name)") { request in
            let query = request.queryParameters[resource.definition.parameter] ?? ""
            guard query.unicodeScalars.count <= SearchView.maximumQueryLength else {
                return request.respond(.badRequest("\(resource.definition.parameter) is longer than \(SearchView.maximumQueryLength) characters"))
            }
            if request.acceptsEventStream {
                streams.open(request, resource: resource.name, view: SearchView(resource, initialQuery: query, scheduler: scheduler))
            } else {
                request.answer(with: resource.results(for: query))
            }
        }
    }
}
