import Aggregation
import HTTPServer

/// The operator's endpoints: `GET /healthz` (liveness), `GET /metrics` (Prometheus text
/// format), `GET /` (the live page) and `GET /openapi.json` (the API described,
/// ``OpenAPIDocument``).
struct OperationsRoutes {
    /// The serialized ``OpenAPIDocument`` of the worker's configuration: made once, as it is the
    /// same for every request. Answered as a resource's JSON is (ETag, 304, gzip: it is tens of
    /// kilobytes, fetched again by every API explorer that opens).
    let openAPIDocument: Snapshot
    /// The live page, made once for the configuration (``IndexPage/page(parameterized:)``).
    let page: String

    func register(in router: inout Router<Route>) {
        // Liveness and metrics are of one moment: no cache may answer them later.
        router.add(.get, "/healthz") { request in
            request.respond(status: 200, json: #"{"status":"ok"}"#, headers: [("Cache-Control", "no-store")])
        }
        router.add(.get, "/metrics") { request in
            request.respond(status: 200,
                            headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8"), ("Cache-Control", "no-store")],
                            body: MetricsExport.registry.emitToBuffer())
        }
        router.add(.get, "/") { request in
            request.respond(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")],
                            text: page)
        }
        router.add(.get, "/openapi.json") { request in request.respond(with: openAPIDocument) }
    }
}
