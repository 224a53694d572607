import HTTPCore
import Aggregation
import HTTPServer

/// The endpoints of one `kind: pages` resource named `name` (e.g. `rows`):
///
/// - `GET /<name>`: every row with its first page, as JSON (``JSONAnswers``).
/// - `GET /<name>` with `Accept: text/event-stream`: a stream with a view of its own
///   (``RowsView``): triggers `loadMore` (`?topic=<id>`: that row's next page) and `reload`.
/// - `POST /<name>/reload`: `reload` every live stream of the resource, on every worker, and in
///   a fleet on every replica (with the admin token, when one is configured).
struct PagedListRoutes {
    let resource: PagedListResource
    let argument: String
    let streams: EventStreamHub
    let directory: StreamDirectory
    let cluster: ClusterLink?
    let admin: AdminToken
    let answers: JSONAnswers

    /// How a stream of the resource gets its view: one of its own, taking no parameters.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(resource.definition)) { [resource, argument] _, trace in
            .success(RowsView(resource, argument: argument, trace: trace))
        }
    }

    func register(in router: inout Router<Route>) {
        router.add(.get, "/\(resource.name)") { request in
            request.servesResource()
            if request.acceptsEventStream {
                streams.open(request, resource: resource.name, views: liveViews)
            } else if let refusal = EventUpdates.refusal(of: request) {
                request.respond(refusal)
            } else {
                answers.answer(request, url: "") { resource.firstPages(trace: request.traceContext) }
            }
        }
        router.add(.post, "/\(resource.name)/reload") { request in
            guard admin.authorize(request) else { return }
            let name = resource.name
            if let cluster {
                cluster.reload(name)
            } else {
                for listing in directory.allListings {
                    listing.loop.execute { listing.hub?.activate("reload", onEveryStreamOf: name) }
                }
            }
            request.respond(status: 202, json: JSONWriter.object([("reloading", resource.name)]),
                            headers: [("Cache-Control", "no-store")])
        }
    }
}
