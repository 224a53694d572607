import AccessControl
import HTTPCore
import HTTPServer
import TributaryConfiguration

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
///
/// A token is required if any resource asked for requires one (for a query that cannot be
/// read: if any resource does), with every scope any needs, before anything else is answered;
/// the stream's opening counts against the limit of each resource (each limit once).
struct EventsRoutes {
    /// Each resource's factory of live views, by name.
    let views: [String: LiveViewFactory]
    let streams: EventStreamHub
    let gate: AccessGate
    /// Each resource's access, by name.
    let accesses: [String: Configuration.ResourceAccess]

    func register(in router: inout Router<Route>) {
        let known = Set(views.keys)
        router.add(.get, "/events") { request in
            // What it answers depends on Accept too: the stream, or 406.
            request.servesResource()
            let query: Result<EventsQuery, HTTPError>
            do throws(HTTPError) {
                query = .success(try EventsQuery(QueryString.pairs(request.query ?? ""), known: known))
            } catch {
                query = .failure(error)
            }
            // A query that names no resource it can be sure of answers as every resource
            // would: a token first where any needs one (as the document declares).
            let names = (try? query.get()).map { $0.subscriptions.map(\.resource) } ?? Array(known)
            let policy = AccessPolicy(label: "events", accesses: names.sorted().compactMap { accesses[$0] })
            if policy.authRequired { request.responseHeaders.append(("Vary", "Authorization")) }
            guard !gate.isOpen(policy) else { return serve(request, query, as: nil) }
            gate.admit(request, policy) { credential in serve(request, query, as: credential) }
        }
    }

    /// Once admitted: the query's error, 406, or the stream.
    private func serve(_ request: ServerRequest, _ query: Result<EventsQuery, HTTPError>, as credential: Credential?) {
        switch query {
        case .failure(let error):
            request.respond(error)
        case .success(let query):
            guard request.admitsEventStream else {
                return request.respond(HTTPError(status: 406, code: "not_acceptable",
                                                 message: "/events answers text/event-stream only, and Accept rules it out"))
            }
            open(request, query, as: credential)
        }
    }

    /// Opens the stream of `query`'s resources for the holder of `credential`, each view
    /// made first (a refused parameter answers, and nothing is subscribed).
    private func open(_ request: ServerRequest, _ query: EventsQuery, as credential: Credential?) {
        let subscriptions = query.subscriptions
        streams.open(
            request, count: subscriptions.count, framing: .multiplexed, updates: query.updates, progressive: query.progressive,
            credential: credential
        ) { opener in
            var resources: [StreamedResource] = []
            for subscription in subscriptions {
                switch views[subscription.resource]!.streamed(subscription.resource, for: request, given: subscription.parameters, opener: opener) {
                case .success(let resource):
                    resources.append(resource)
                case .failure(var error):
                    error.message = "resource \(subscription.resource): \(error.message)"
                    return .failure(error)
                }
            }
            return .success(resources)
        }
    }
}
