public import HTTPCore
public import Tracing

/// The spans the service records, made with a swift-distributed-tracing `Tracer` (swift-otel's,
/// exporting over OTLP, when `OTEL_EXPORTER_OTLP_ENDPOINT` or `telemetry.otlp.endpoint` is
/// set; ``OTLPExport``). Named and attributed by OpenTelemetry's HTTP conventions:
///
/// ```
/// GET /teams/{team}/groups   SERVER  http.request.method, http.route, url.path, http.response.status_code
/// ├── GET                    CLIENT  http.request.method, server.address, server.port, url.path,
/// │                                  http.response.status_code, tributary.call = list
/// └── GET                    CLIENT  … tributary.call = detail   (a retry: a span of its own)
/// refresh groups             INTERNAL, a root: one live pipeline's refresh, its calls as children
/// ```
///
/// Tracing off is no `Spans` at all: whoever would record holds a `Spans?` and pays one
/// comparison with nil (the checked instruction budgets hold).
///
/// The spans meet the rest of the service as ``TraceContext`` values, which carry no
/// reference: the request's context names its SERVER span as its own (``TraceContext/span``),
/// so a CLIENT span made from it, on whatever loop and however late, is that span's child,
/// and the `traceparent` sent upstream names the CLIENT span. Nothing here holds a secret:
/// `url.path` is the path only, never the query (where an `access_token` may travel).
public final class Spans: Sendable {
    private let tracer: any Tracer

    public init(tracer: any Tracer) {
        self.tracer = tracer
    }

    /// A request's SERVER span, the child of its caller's span when `traceparent` is valid
    /// (and sampled, under the default sampler); else the root of a new trace. Named
    /// `METHOD route` (`GET /teams/{team}/groups`), or `METHOD` when no route matched.
    public func server(method: HTTPMethod, route: String?, path: String, traceparent: String?, tracestate: String?) -> TracedSpan {
        var parent = ServiceContext.topLevel
        if let traceparent {
            tracer.extract(TraceHeaders(traceparent: traceparent, tracestate: tracestate), into: &parent, using: TraceHeaders.Access())
        }
        let span = tracer.startSpan(route.map { "\(method.rawValue) \($0)" } ?? method.rawValue, context: parent, ofKind: .server)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method.rawValue
            if let route { attributes["http.route"] = route }
            attributes["url.path"] = path
        }
        return TracedSpan(span, tracer: tracer, state: tracestate)
    }

    /// A CLIENT span for one upstream call (one attempt) of `trace`, the child of the span
    /// `trace` names as its own. `call` says what it is for: list, detail, batch, page, search.
    public func client(
        of trace: TraceContext, method: HTTPMethod, host: String, port: Int, path: String, call: StaticString
    ) -> TracedSpan {
        var parent = ServiceContext.topLevel
        tracer.extract(TraceHeaders(traceparent: trace.ownParent, tracestate: nil), into: &parent, using: TraceHeaders.Access())
        let span = tracer.startSpan(method.rawValue, context: parent, ofKind: .client)
        span.updateAttributes { attributes in
            attributes["http.request.method"] = method.rawValue
            attributes["server.address"] = host
            attributes["server.port"] = port
            attributes["url.path"] = Self.pathOnly(path)
            attributes["tributary.call"] = call.description
        }
        return TracedSpan(span, tracer: tracer, state: trace.state)
    }

    /// The root span of one refresh of live pipeline `resource`: no request causes it, so it
    /// starts a trace of its own, with the refresh's upstream calls as its children.
    public func refresh(resource: String) -> TracedSpan {
        let span = tracer.startSpan("refresh \(resource)", context: ServiceContext.topLevel, ofKind: .internal)
        span.attributes["tributary.resource"] = resource
        return TracedSpan(span, tracer: tracer, state: nil)
    }

    /// A path without its query: a query may carry what must not reach telemetry.
    static func pathOnly(_ path: String) -> String {
        guard let question = path.utf8.firstIndex(of: UInt8(ascii: "?")) else { return path }
        return String(path[..<question])
    }
}

/// One span in progress: ended once, with the status of the answer or the failure that ended
/// it. Its ``trace`` is what the work it covers carries (a request's upstream calls, the
/// `traceparent` of a call). Loop-confined, as the work it covers is.
public final class TracedSpan {
    private let span: any Span
    /// The trace as the service carries it, naming this span as its own.
    public let trace: TraceContext
    private var ended = false

    init(_ span: any Span, tracer: any Tracer, state: String?) {
        self.span = span
        var headers = TraceHeaders()
        tracer.inject(span.context, into: &headers, using: TraceHeaders.Access())
        // An unsampled or unrecorded span still has ids: its calls carry them on, unsampled.
        trace = headers.traceparent.flatMap { TraceContext(ownSpanOf: $0, tracestate: state) } ?? TraceContext()
    }

    /// Ends the span with an HTTP status: 5xx is an error (for a SERVER span, 4xx is the
    /// client's and not; a CLIENT span's caller decides, so any 4xx or 5xx is an error).
    public func end(status: Int, isClient: Bool = false) {
        guard !ended else { return }
        ended = true
        let failed = status >= 500 || (isClient && status >= 400)
        span.updateAttributes { attributes in
            attributes["http.response.status_code"] = status
            if failed { attributes["error.type"] = String(status) }
        }
        if failed { span.setStatus(SpanStatus(code: .error)) }
        span.end()
    }

    /// Ends the span with a failure that left no status: `kind` is its short, stable name
    /// (`timeout`, `connection_failed`, `cancelled`), never a message that could hold a secret.
    public func end(failure kind: String) {
        guard !ended else { return }
        ended = true
        span.attributes["error.type"] = kind
        span.setStatus(SpanStatus(code: .error))
        span.end()
    }

    /// Ends the span as it is (a refresh that delivered, a stream whose first event went out).
    public func end() {
        guard !ended else { return }
        ended = true
        span.end()
    }

    deinit {
        // A span dropped unended (its work went away without a word) still reaches the collector.
        if !ended { span.end() }
    }
}

/// `traceparent` and `tracestate` as the tracer's propagator reads and writes them.
struct TraceHeaders {
    var traceparent: String?
    var tracestate: String?

    struct Access: Extractor, Injector {
        // The W3C propagator names its headers in lower case; nothing else calls these.
        func extract(key: String, from carrier: TraceHeaders) -> String? {
            switch key {
            case "traceparent": carrier.traceparent
            case "tracestate": carrier.tracestate
            default: nil
            }
        }

        func inject(_ value: String, forKey key: String, into carrier: inout TraceHeaders) {
            switch key {
            case "traceparent": carrier.traceparent = value
            case "tracestate": carrier.tracestate = value
            default: break
            }
        }
    }
}
