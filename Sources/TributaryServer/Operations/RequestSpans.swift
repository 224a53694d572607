import HTTPServer
import Telemetry

extension Spans {
    /// The SERVER span of `request`, named by the route it matched (`GET /teams/{team}/groups`),
    /// its `url.path` redacted as the access log's target is: a stream id keeps its first 8
    /// characters (``RedactedTarget``). Read while the request's headers are at hand.
    func server(for request: ServerRequest) -> TracedSpan {
        server(
            method: request.method, route: request.route, path: RedactedTarget.of(request.path),
            traceparent: request.header("traceparent"), tracestate: request.header("tracestate"))
    }
}
