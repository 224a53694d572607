import Aggregation
import HTTPCore
import HTTPServer

/// How a new stream of one resource gets its view model, from the request's parameters for
/// that resource: the query of `GET /<name>`, or on `GET /events` the parameters named
/// `<name>.…`, the prefix removed. Both ways to subscribe go through the same factory, so a
/// parameter one refuses the other refuses too, with the same status and code. A view of its
/// own calls its upstreams as spans of the `trace` of the request that opened the stream.
///
/// ```swift
/// switch factory.make(["q": "swift"], request.traceContext) {
/// case .success(let view): streams.open(request, resource: "search", view: view)
/// case .failure(let error): request.respond(error)
/// }
/// ```
struct LiveViewFactory {
    /// How patches of the views' documents are made (`updates=patch`): the members that are
    /// the resource's items' ids (``PatchIdentity``).
    let diff: JSONDiff
    let make: (_ parameters: [String: String], _ trace: TraceContext) -> Result<any LiveViewModel, HTTPError>
}
