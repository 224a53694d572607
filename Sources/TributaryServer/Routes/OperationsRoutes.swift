import Libevent

/// The operator's endpoints: `GET /healthz` (liveness), `GET /metrics` (Prometheus text
/// format), and `GET /` (the live page).
struct OperationsRoutes {
    func register(in router: inout Router<Route>) {
        router.add(.get, "/healthz") { request in request.respond(status: 200, json: #"{"status":"ok"}"#) }
        router.add(.get, "/metrics") { request in
            request.respond(status: 200, headers: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")],
                            body: MetricsExport.registry.emitToBuffer())
        }
        router.add(.get, "/") { request in
            request.respond(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache")],
                            text: IndexPage.html)
        }
    }
}
