import Aggregation
import HTTPServer
import OpenCombine

/// The endpoints of one `kind: list` resource named `name`, served at its `route` (`/<name>`
/// unless configured, e.g. `/teams/{team}/groups`):
///
/// - `GET <route>`: the snapshot as JSON, for the request's parameter values and identity,
///   fetched for this request and those asking the same at the same time (``JSONAnswers``;
///   the upstream calls carry the trace of the request that started the run); the last of
///   them to disconnect cancels it and every upstream call in flight.
/// - `GET <route>` with `Accept: text/event-stream`: the live stream of the process's shared
///   pipeline for those values and that identity (``WorkerPipelines``).
/// - `POST /<name>/reload`: refresh every pipeline of the resource now, for every subscriber
///   (with the admin token, when one is configured).
///
/// Parameters are checked before anything is fetched or subscribed: 400
/// `missing_parameter` or `invalid_parameter`, naming the parameter.
/// A class: its route handlers capture it, and a struct this size would be copied into
/// every request's closures.
final class ListResourceRoutes {
    let name: String
    let settings: Configuration.ListSettings
    let definition: Configuration.ResourceDefinition
    let upstream: Upstream
    let requests: ResourceRequestReader
    let pipelines: WorkerPipelines
    /// Refreshes every pipeline of the resource, here or through the fleet.
    let reload: @Sendable () -> Void
    let streams: EventStreamHub
    let admin: AdminToken
    let answers: JSONAnswers
    /// Who may call it, and how often.
    let door: ResourceDoor
    /// What its snapshots share about details: the worker's batch windows, the detail cache.
    let details: DetailSharing?
    /// The resource as every request without parameters or identity asks for it, made once.
    private let everyone: ListResource

    init(
        name: String, settings: Configuration.ListSettings, definition: Configuration.ResourceDefinition, upstream: Upstream,
        requests: ResourceRequestReader, pipelines: WorkerPipelines, reload: @escaping @Sendable () -> Void,
        streams: EventStreamHub, admin: AdminToken, answers: JSONAnswers, door: ResourceDoor, details: DetailSharing?
    ) {
        self.name = name
        self.settings = settings
        self.definition = definition
        self.upstream = upstream
        self.requests = requests
        self.pipelines = pipelines
        self.reload = reload
        self.streams = streams
        self.admin = admin
        self.answers = answers
        self.door = door
        self.details = details
        everyone = ListResource(name: name, upstream: upstream, definition: settings.definition, sharing: details)
    }

    /// How a stream of the resource gets its view: the shared pipeline of its key.
    var liveViews: LiveViewFactory {
        LiveViewFactory(diff: PatchIdentity.diff(settings.definition), make: { [requests, pipelines, definition, settings] request, given, opener in
            let credential = opener.credential
            let asked = given.map { requests.read(request, given: $0, as: credential) } ?? requests.read(request, as: credential)
            return asked.flatMap { asked in
                pipelines.view(
                    for: asked, definition: definition, refreshInterval: settings.refreshInterval,
                    maxPipelines: settings.maxLivePipelines, client: opener.client)
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

    /// `GET <route>` once admitted: the live stream, or the JSON document.
    private func serve(_ request: ServerRequest, as credential: Credential?) {
        if request.acceptsEventStream { return streams.open(request, resource: name, views: liveViews, credential: credential) }
        if let refusal = EventUpdates.refusal(of: request) { return request.respond(refusal) }
        switch requests.read(request, as: credential) {
        case .success(let asked): answers.answer(request, key: asked.key) { resource(for: asked).snapshot(trace: request.traceContext) }
        case .failure(let error): request.respond(error)
        }
    }

    /// The resource for what `asked` names: the one made once, when it names nothing.
    private func resource(for asked: ResourceRequest) -> ListResource {
        guard !asked.parameters.isEmpty || !asked.caller.forwardedHeaders.isEmpty else { return everyone }
        return ListResource(
            name: name, upstream: upstream, definition: settings.definition, parameters: asked.parameters, caller: asked.caller,
            sharing: details)
    }
}
