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
/// switch factory.make(request, nil, credential) {          // GET <route>, Accept: text/event-stream
/// case .success(let view): streams.open(request, resource: "search", view: view)
/// case .failure(let error): request.respond(error)
/// }
/// ```
struct LiveViewFactory {
    /// How patches of the views' documents are made (`updates=patch`): the members that are
    /// the resource's items' ids (``PatchIdentity``).
    let diff: JSONDiff
    /// `given`: the resource's parameters by name, or nil to read them from the request's
    /// own route and query; `credential`: the request's verified token.
    let make: (_ request: ServerRequest, _ given: [String: String]?, _ credential: Credential?) -> Result<any LiveViewModel, HTTPError>
    /// Whether its views are per identity, and the request headers they vary on: a stream
    /// carrying one is `Cache-Control: private`.
    var varyingHeaders: [String] = []
}
