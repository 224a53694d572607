import HTTPCore
import HTTPServer

/// `GET /events?resource=groups&resource=rows&resource=search&search.q=swift`: one event stream
/// carrying several live resources (browsers hold at most six HTTP/1.1 connections per
/// origin: a page with several live views must not need one each). Each resource gets the
/// view model and the id its own route would give it, announced in an `event: stream` of its
/// own and reached at `/streams/{id}/…` as usual; events are tagged with their resource and
/// snapshots carry a ``CompositeEventID`` (see ``EventStreamFraming``).
///
/// Everything is checked before anything is subscribed: the query (``EventsQuery``), each
/// resource's parameters (as its own route checks them, with the same status), and `Accept`:
/// a stream is all this endpoint serves, so an `Accept` that rules `text/event-stream` out is
/// 406 `not_acceptable`, while none, `*/*` or `text/*` gets the stream (as `curl -N` expects).
struct EventsRoutes {
    /// Each resource's factory of live views, by name.
    let views: [String: LiveViewFactory]
    let streams: EventStreamHub

    func register(in router: inout Router<Route>) {
        let known = Set(views.keys)
        router.add(.get, "/events") { request in
            // What it answers depends on Accept too: the stream, or 406.
            request.servesResource()
            let query: EventsQuery
            do throws(HTTPError) {
                query = try EventsQuery(QueryString.pairs(request.query ?? ""), known: known)
            } catch {
                return request.respond(error)
            }
            guard request.admitsEventStream else {
                return request.respond(HTTPError(status: 406, code: "not_acceptable",
                                                 message: "/events answers text/event-stream only, and Accept rules it out"))
            }
            var resources: [StreamedResource] = []
            for subscription in query.subscriptions {
                let factory = views[subscription.resource]!
                switch factory.make(request, subscription.parameters) {
                case .success(let view):
                    resources.append(StreamedResource(
                        name: subscription.resource, view: view, diff: factory.diff, isPrivate: !factory.varyingHeaders.isEmpty))
                case .failure(var error):
                    error.message = "resource \(subscription.resource): \(error.message)"
                    return request.respond(error)
                }
            }
            streams.open(request, carrying: resources, framing: .multiplexed, updates: query.updates)
        }
    }
}
