import HTTPCore
import Aggregation
import HTTPServer
import OpenCombine

/// The endpoints of one `kind: list` resource named `name`:
///
/// - `GET /<name>`: the snapshot as JSON, fetched for this request and those asking at the
///   same time (``JSONAnswers``; the upstream calls carry the trace of the request that
///   started the run); the last of them to disconnect cancels it and every upstream call in
///   flight.
/// - `GET /<name>` with `Accept: text/event-stream`: the live stream (``EventStream``) of the
///   process's shared pipeline (``LiveSource``).
/// - `POST /<name>/reload`: refresh the shared pipeline now, for every subscriber (with the
///   admin token, when one is configured).
struct ListResourceRoutes {
    let resource: ListResource
    let live: any LiveSource
    let streams: EventStreamHub
    let admin: AdminToken
    let answers: JSONAnswers

    /// Every stream of the resource on this worker shows the same view of the shared pipeline.
    private let view: SharedLiveView

    init(resource: ListResource, live: any LiveSource, streams: EventStreamHub, admin: AdminToken, answers: JSONAnswers) {
        self.resource = resource
        self.live = live
        self.streams = streams
        self.admin = admin
        self.answers = answers
        view = SharedLiveView(live)
    }

    /// How a stream of the resource gets its view: it takes no parameters.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(resource.definition)) { [view] _, _ in .success(view) }
    }

    func register(in router: inout Router<Route>) {
        router.add(.get, "/\(resource.name)") { request in
            request.servesResource()
            if request.acceptsEventStream {
                streams.open(request, resource: resource.name, views: liveViews)
            } else if let refusal = EventUpdates.refusal(of: request) {
                request.respond(refusal)
            } else {
                answers.answer(request, url: "") { resource.snapshot(trace: request.traceContext) }
            }
        }
        router.add(.post, "/\(resource.name)/reload") { request in
            guard admin.authorize(request) else { return }
            live.reload()
            request.respond(status: 202, json: JSONWriter.object([("reloading", resource.name)]),
                            headers: [("Cache-Control", "no-store")])
        }
    }
}
