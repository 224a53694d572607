import AccessControl
import Aggregation
import HTTPServer

/// How a new stream of one resource gets its view model, from what the request asks of the
/// resource: its own route's segments and query (`GET /teams/core/groups`), or on `GET
/// /events` the parameters named `<name>.…`, the prefix removed (`groups.team=core`), for the
/// holder of the request's verified token (its subject is part of the identity). Both
/// ways to subscribe go through the same factory, so a parameter one refuses the other
/// refuses too, with the same status and code. A view of its own calls its upstreams as spans
/// of the trace of the request that opened the stream, with the headers it forwards.
///
/// ```swift
/// switch factory.streamed("groups", for: request, given: nil, opener: opener) {   // GET <route>, Accept: text/event-stream
/// case .success(let resource): …                                               // the stream shows it
/// case .failure(let error): request.respond(error)
/// }
/// ```
struct LiveViewFactory {
    /// How patches of the views' documents are made (`updates=patch`): the members that are
    /// the resource's items' ids (``PatchIdentity``).
    let diff: JSONDiff
    /// `given`: the resource's parameters by name, or nil to read them from the request's
    /// own route and query; `opener`: who opens the stream. The view, with the parameter
    /// values it shows.
    let make: (_ request: ServerRequest, _ given: [String: String]?, _ opener: StreamOpener)
        -> Result<(view: any LiveViewModel, parameters: ParameterValues), HTTPError>
    /// Whether its views are per identity, and the request headers they vary on: a stream
    /// carrying one is `Cache-Control: private`.
    var varyingHeaders: [String] = []

    /// Resource `name` as a new stream carries it: its view for `request` (see ``make``), the
    /// parameter values it shows, how its patches are made, whether it is private.
    func streamed(
        _ name: String, for request: ServerRequest, given: [String: String]?, opener: StreamOpener
    ) -> Result<StreamedResource, HTTPError> {
        make(request, given, opener).map { made in
            StreamedResource(name: name, view: made.view, parameters: made.parameters, diff: diff, isPrivate: !varyingHeaders.isEmpty)
        }
    }
}

/// Who opens a stream: the request's verified token (if any), and the client as its quotas
/// count it (``AccessGate/clientName(_:_:by:)`` by identity: `sub:…` with a token, else
/// `ip:…`), whose share of the shared live pipelines a new one is charged to.
struct StreamOpener {
    let credential: Credential?
    let client: String
}
