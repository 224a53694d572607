import Aggregation
import HTTPServer

/// The operator's endpoints: `GET /healthz` (liveness), `GET /readyz` (readiness,
/// ``Readiness``), `GET /metrics` (Prometheus text format), `GET /` (the live page) and
/// `GET /openapi.json` (the API described, ``OpenAPIDocument``).
struct OperationsRoutes {
    let readiness: Readiness
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
        router.add(.get, "/readyz") { request in
            switch readiness.state {
            case .ready:
                request.respond(status: 200, json: #"{"status":"ready"}"#, headers: [("Cache-Control", "no-store")])
            case .starting:
                request.respond(Self.starting, headers: [("Retry-After", "1")])
            case .draining:
                request.respond(Self.draining, headers: [("Retry-After", "1")])
            }
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

    static let starting = HTTPError(
        status: 503, code: "starting", message: "the service is starting (in a fleet: until it has joined the fleet)")
    static let draining = HTTPError(status: 503, code: "draining", message: "the service is stopping: it takes no new requests")
}
