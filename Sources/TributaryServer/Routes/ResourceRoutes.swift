import AccessControl
import Aggregation
import HTTPCore
import HTTPServer
import OpenCombine

/// What one kind of resource (`list`, `pages`, `search`) says of its own: what a request
/// asks of it beyond its parameters and caller, the document a JSON GET answers, and the view
/// a stream shows. Everything else every resource does alike, in one chain
/// (``ResourceRoutes``): its route, `Vary`, admission (tokens, scopes, rate limits), its
/// parameters read and checked, a stream or a JSON answer, coalescing and stale answers.
protocol ServedKind {
    /// What a request asks once its parameters and caller are read (a list: just that; a
    /// search: that and its query).
    associatedtype Asked

    /// What `request` asks of the resource, its parameters and caller read (`asked`); on `GET
    /// /events`, `given` holds the resource's own query parameters (the prefix removed).
    func asking(_ asked: ResourceRequest, of request: ServerRequest, given: [String: String]?) -> Result<Asked, HTTPError>
    /// What JSON answers to the same `Asked` share (a coalesced run, a stale document).
    func key(of asked: Asked) -> SharingKey
    /// The document a JSON GET answers.
    func document(for asked: Asked, trace: TraceContext) -> AnyPublisher<JSON, ResourceError>
    /// The view a live stream of the resource shows.
    func view(for asked: Asked, of request: ServerRequest, opener: StreamOpener) -> Result<any LiveViewModel, HTTPError>
    /// How patches of its documents are made (`updates=patch`).
    var diff: JSONDiff { get }
    /// `POST /<name>/reload[?team=core]`, for kinds that refresh every subscriber at once:
    /// refreshes the live pipelines whose parameter values hold those given (all, for none)
    /// and says how many it counted.
    var reload: (@Sendable (ParameterValues) -> Int)? { get }
}

/// The endpoints of one resource named `name`, served at its `route` (`/<name>` unless
/// configured, e.g. `/teams/{team}/groups`), whatever its kind:
///
/// - `GET <route>`: admitted by its ``ResourceDoor``, its parameters and `fields` read and
///   checked (400 `missing_parameter` or `invalid_parameter`, naming the parameter, before
///   anything is fetched or subscribed); then with `Accept: text/event-stream` a live stream of the
///   kind's view, else the kind's document as JSON (``JSONAnswers``: requests asking the same
///   at the same time share one run, whose upstream calls carry the trace of the request that
///   started it; the last of them to disconnect cancels it and every call in flight).
/// - `POST /<name>/reload[?team=core]`, when the kind has a reload (with the admin token, if
///   configured): the parameters given aim it (checked as a `GET`'s, 400 `invalid_parameter`).
///
/// A class, generic over its kind (specialized: no existential on the JSON path): its route
/// handlers capture it, and a struct this size would be copied into every request's closures.
final class ResourceRoutes<Kind: ServedKind> {
    let name: String
    let route: String
    let kind: Kind
    let requests: ResourceRequestReader
    let streams: EventStreamHub
    let admin: AdminToken
    let answers: JSONAnswers
    /// Who may call it, and how often.
    let door: ResourceDoor

    init(
        name: String, route: String, kind: Kind, requests: ResourceRequestReader, streams: EventStreamHub, admin: AdminToken,
        answers: JSONAnswers, door: ResourceDoor
    ) {
        self.name = name
        self.route = route
        self.kind = kind
        self.requests = requests
        self.streams = streams
        self.admin = admin
        self.answers = answers
        self.door = door
        liveViews = LiveViewFactory(diff: kind.diff, make: { [requests, kind] request, given, opener in
            let credential = opener.credential
            let read = given.map { requests.read(request, given: $0, as: credential) } ?? requests.read(request, as: credential)
            return read.flatMap { read in
                kind.asking(read, of: request, given: given).flatMap { kind.view(for: $0, of: request, opener: opener) }.map { ($0, read.parameters) }
            }
        }, varyingHeaders: requests.varyingHeaders)
    }

    /// How a stream of the resource gets its view, on its own route or on `GET /events`. Made
    /// once: every stream keeps it, and one made per stream was two allocations per subscriber.
    let liveViews: LiveViewFactory

    func register(in router: inout Router<Route>) {
        router.add(.get, route) { [self] request in
            request.servesResource(varyingOn: requests.varyingHeaders)
            guard door.isOpen else { return door.admit(request) { [self] credential in serve(request, as: credential) } }
            serve(request, as: nil)
        }
        if let reload = kind.reload { router.addReload(of: name, admin: admin, aim: requests.reloadValues(of:), reload) }
    }

    /// `GET <route>` once admitted: the live stream, or the JSON document.
    private func serve(_ request: ServerRequest, as credential: Credential?) {
        if request.acceptsEventStream { return streams.open(request, resource: name, views: liveViews, credential: credential) }
        if let refusal = EventUpdates.refusal(of: request) ?? ProgressiveDocuments.refusal(of: request) { return request.respond(refusal) }
        switch requests.read(request, as: credential).flatMap({ read in kind.asking(read, of: request, given: nil).map { (read.fields, $0) } }) {
        case .success(let (fields, asked)):
            answers.answer(request, key: kind.key(of: asked), keeping: fields) { kind.document(for: asked, trace: request.traceContext) }
        case .failure(let error): request.respond(error)
        }
    }
}
