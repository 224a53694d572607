import Aggregation
import Libevent
import OpenCombine

/// The endpoints of one `kind: list` resource named `name`:
///
/// - `GET /<name>`: the snapshot as JSON, fetched for this request; a client that disconnects
///   cancels it and every upstream call in flight.
/// - `GET /<name>` with `Accept: text/event-stream`: the live stream (``EventStream``) of the
///   worker's shared pipeline (``LiveResource``).
/// - `POST /<name>/reload`: refresh the shared pipeline now, for every subscriber.
struct ListResourceRoutes {
    let resource: ListResource
    let live: LiveResource
    let streams: EventStreamHub

    func register(in router: inout Router<(ServerRequest) -> Void>) {
        router.add(.get, "/\(resource.name)") { request in
            if request.acceptsEventStream {
                streams.open(request, triggers: ["reload"], states: live.states)
            } else {
                respondWithSnapshot(request)
            }
        }
        router.add(.post, "/\(resource.name)/reload") { request in
            live.reload()
            request.respond(status: 202, json: #"{"reloading":""# + JSONText.escaped(resource.name) + #""}"#)
        }
    }

    private func respondWithSnapshot(_ request: ServerRequest) {
        let snapshot = resource.snapshot().sink(
            receiveCompletion: { completion in
                if case .failure(let error) = completion { request.respond(error.httpError) }
            },
            receiveValue: { document in
                request.respond(status: 200, headers: [("Content-Type", "application/json")], body: document.serialized)
            })
        request.onDisconnect = { snapshot.cancel() }
    }
}

extension ServerRequest {
    /// Whether the client asked for `text/event-stream` (an `EventSource`, `curl -H 'Accept: text/event-stream'`).
    var acceptsEventStream: Bool {
        header("Accept")?.contains("text/event-stream") == true
    }
}
