import Aggregation
import HTTPServer

/// The endpoints of one `kind: pages` resource named `name` (e.g. `rows`), served at its
/// `route` (`/<name>` unless configured):
///
/// - `GET <route>`: every row with its first page, as JSON (``JSONAnswers``).
/// - `GET <route>` with `Accept: text/event-stream`: a stream with a view of its own
///   (``RowsView``): triggers `loadMore` (`?topic=<id>`: that row's next page) and `reload`.
/// - `POST /<name>/reload`: `reload` every live stream of the resource, on every worker, and in
///   a fleet on every replica (with the admin token, when one is configured).
///
/// Parameters are checked before anything is fetched or subscribed (400).
/// A class: its route handlers capture it, and a struct this size would be copied into
/// every request's closures.
final class PagedListRoutes {
    let name: String
    let settings: Configuration.PagesSettings
    let upstream: Upstream
    let requests: ResourceRequestReader
    let streams: EventStreamHub
    /// Reloads every stream of the resource, here or through the fleet.
    let reload: @Sendable () -> Void
    let admin: AdminToken
    let answers: JSONAnswers
    /// Who may call it, and how often.
    let door: ResourceDoor

    init(
        name: String, settings: Configuration.PagesSettings, upstream: Upstream, requests: ResourceRequestReader,
        streams: EventStreamHub, reload: @escaping @Sendable () -> Void, admin: AdminToken, answers: JSONAnswers, door: ResourceDoor
    ) {
        self.name = name
        self.settings = settings
        self.upstream = upstream
        self.requests = requests
        self.streams = streams
        self.reload = reload
        self.admin = admin
        self.answers = answers
        self.door = door
    }

    /// How a stream of the resource gets its view: one of its own, for its parameter values
    /// and caller.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(settings.definition), make: { [self] request, given, opener in
            let credential = opener.credential
            let asked = given.map { requests.read(request, given: $0, as: credential) } ?? requests.read(request, as: credential)
            return asked.map { asked in
                RowsView(resource(for: asked), argument: settings.loadMoreArgument, trace: request.traceContext)
            }
        }, varyingHeaders: requests.varyingHeaders)
    }

    func register(in router: inout Router<Route>) {
        router.add(.get, settings.routing.route) { [self] request in
            request.servesResource(varyingOn: requests.varyingHeaders)
            guard door.isOpen else { return door.admit(request) { [self] credential in serve(request, as: credential) } }
            serve(request, as: nil)
        }
        router.addReload(of: name, admin: admin, reload)
    }

    /// `GET <route>` once admitted: a stream, or the JSON document.
    private func serve(_ request: ServerRequest, as credential: Credential?) {
        if request.acceptsEventStream { return streams.open(request, resource: name, views: liveViews, credential: credential) }
        if let refusal = EventUpdates.refusal(of: request) { return request.respond(refusal) }
        switch requests.read(request, as: credential) {
        case .success(let asked): answers.answer(request, key: asked.key) { resource(for: asked).firstPages(trace: request.traceContext) }
        case .failure(let error): request.respond(error)
        }
    }

    private func resource(for asked: ResourceRequest) -> PagedListResource {
        PagedListResource(name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller)
    }
}
