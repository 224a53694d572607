import Aggregation
import Libevent
import OpenCombine

/// The endpoints of one `kind: list` resource named `name`:
///
/// - `GET /<name>`: the snapshot as JSON, fetched for this request; a client that disconnects
///   cancels it and every upstream call in flight.
/// - `GET /<name>` with `Accept: text/event-stream`: the live stream (``EventStream``) of the
///   process's shared pipeline (``LiveSource``).
/// - `POST /<name>/reload`: refresh the shared pipeline now, for every subscriber (with the
///   admin token, when one is configured).
struct ListResourceRoutes {
    let resource: ListResource
    let live: any LiveSource
    let streams: EventStreamHub
    let admin: AdminToken

    func register(in router: inout Router<Route>) {
        let view = SharedLiveView(live)
        router.add(.get, "/\(resource.name)") { request in
            if request.acceptsEventStream {
                streams.open(request, resource: resource.name, view: view)
            } else {
                request.answer(with: resource.snapshot())
            }
        }
        router.add(.post, "/\(resource.name)/reload") { request in
            guard admin.authorize(request) else { return }
            live.reload()
            request.respond(status: 202, json: #"{"reloading":""# + JSONText.escaped(resource.name) + #""}"#)
        }
    }
}
