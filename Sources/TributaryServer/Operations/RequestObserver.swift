import CoreMetrics
import HTTPCore
import HTTPServer
import Logging

/// Sees every request end: one access log line (at `info`) with method, target (its secrets
/// cut out: ``RedactedTarget``), status and duration, and as metadata the route and
/// `trace_id`, the trace its upstream calls carry (``ServerRequest/traceContext``), and
/// `span_id`, the service's own span for it; and the request metrics:
///
/// - `tributary_http_requests_total{route,method,status}` (`status="disconnected"` when the
///   client left before the answer: its pipeline was cancelled)
/// - `tributary_http_request_duration_seconds{route}`
///
/// `route` is the route's pattern (`/streams/{id}/triggers/{name}`), never the raw path, so
/// the label set stays small. Handles are cached per label set. Loop-confined.
final class RequestObserver {
    private let logger: Logger
    private var counters: [CounterKey: Counter] = [:]
    private var timers: [String: CoreMetrics.Timer] = [:]

    /// A counter's labels as they are at hand (no status text made, no key string joined for
    /// every request): `status` nil for a client that left.
    private struct CounterKey: Hashable {
        let route: String
        let method: HTTPMethod
        let status: Int?
    }

    init(logger: Logger) {
        self.logger = logger
    }

    func completed(_ request: ServerRequest) {
        let route = request.route ?? "unmatched"
        let elapsed = ContinuousClock.now - request.receivedAt
        let status = request.state == .disconnected ? nil : request.status ?? 0
        if let span = request.span {
            if let status { span.end(status: status) } else { span.end(failure: "disconnected") }
        }
        counter(CounterKey(route: route, method: request.method, status: status)).increment()
        timer(route: route).recordNanoseconds(Self.nanoseconds(elapsed))
        logger.info("\(request.method.rawValue) \(RedactedTarget.of(request.uri)) \(Self.statusLabel(status)) \(Self.milliseconds(elapsed))ms",
                    metadata: ["route": .string(route), "trace_id": .string(request.traceContext.traceID),
                              "span_id": .string(request.traceContext.spanID)])
    }

    private static func statusLabel(_ status: Int?) -> String {
        status.map { String($0) } ?? "disconnected"
    }

    private func counter(_ key: CounterKey) -> Counter {
        if let counter = counters[key] { return counter }
        let counter = Counter(label: "tributary_http_requests_total",
                              dimensions: [("route", key.route), ("method", key.method.rawValue), ("status", Self.statusLabel(key.status))])
        counters[key] = counter
        return counter
    }

    private func timer(route: String) -> CoreMetrics.Timer {
        if let timer = timers[route] { return timer }
        let timer = CoreMetrics.Timer(label: "tributary_http_request_duration_seconds", dimensions: [("route", route)])
        timers[route] = timer
        return timer
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    private static func milliseconds(_ duration: Duration) -> String {
        let tenths = nanoseconds(duration) / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
