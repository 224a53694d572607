public import HTTPCore
/// One request to an upstream: a method and a path (percent-encoded, with any query) on a
/// ``BaseURL``.
public struct UpstreamRequest: Sendable {
    public var base: BaseURL
    public var method: HTTPMethod
    /// The path below the base URL, already percent-encoded, e.g. `/groups/a%2Fb/metadata?x=1`.
    public var path: String
    /// Fields checked on this call (a conditional request's validator), written after
    /// ``checkedHeaders``.
    public var headers: [(String, String)]
    /// Fields checked once for all the calls that carry them (an upstream's own, a caller's
    /// forwarded ones), written first.
    public var checkedHeaders: CheckedHeaders
    /// The trace this call is a span of: the client writes its `traceparent` (with a new span
    /// id for each attempt) and `tracestate` into the head, and leaves out any of `headers` by
    /// those names. Written in place, a trace costs a call no strings and no header array
    /// (``TraceContext/upstreamHeaders()`` makes both).
    public var trace: TraceContext? {
        get { storedTrace.context }
        set { storedTrace = TraceSlot(context: newValue) }
    }
    /// ``trace``, in a struct of its own. Stored as an optional property of the request, it
    /// kept the optimizer from building the request in place: the initializer built it in a
    /// temporary, then copied it out and destroyed the temporary, a retain and a release of
    /// each of its strings and arrays, on every upstream call.
    private var storedTrace: TraceSlot
    public var body: [UInt8]
    /// The whole call's deadline, queueing for a pooled connection included.
    public var timeout: Duration
    /// The response headers copied into ``UpstreamResponse/headers``, by lowercase name (most
    /// callers read only the status and body, and copying every header costs strings on
    /// every call; a revalidating call wants its validators and caching headers only).
    public var keptResponseHeaders: [StaticString]
    /// A larger response body fails the call with ``UpstreamError/Kind/responseTooLarge``
    /// (bounded again by the client's own ``UpstreamClient/Configuration/maxResponseBytes``).
    public var maxResponseBytes: Int
    /// What the call is for, as its CLIENT span's `tributary.call` says: `list`, `detail`,
    /// `batch`, `page`, `search` (``Telemetry/Spans``).
    public var call: StaticString

    public init(
        base: BaseURL, method: HTTPMethod = .get, path: String, checkedHeaders: CheckedHeaders = .none,
        headers: [(String, String)] = [], trace: TraceContext? = nil, body: [UInt8] = [], timeout: Duration = .seconds(10),
        keptResponseHeaders: [StaticString] = [], maxResponseBytes: Int = 8 * 1024 * 1024, call: StaticString = "call"
    ) {
        self.base = base
        self.method = method
        self.path = path
        self.headers = headers
        self.checkedHeaders = checkedHeaders
        storedTrace = TraceSlot(context: trace)
        self.body = body
        self.timeout = timeout
        self.keptResponseHeaders = keptResponseHeaders
        self.maxResponseBytes = maxResponseBytes
        self.call = call
    }

    /// What goes on the request line: the base path and the request path.
    var target: String { base.path + path }
}

/// An optional trace as ``UpstreamRequest`` stores it (see `storedTrace` there).
private struct TraceSlot: Sendable {
    var context: TraceContext?
}

/// An upstream's answer, whatever its status.
public struct UpstreamResponse: Sendable {
    public var status: Int
    /// The response headers, when the request asked to keep them.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The value of a response header (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.first { HTTPSyntax.equalsIgnoringCase($0.name, name) }?.value
    }
}

/// Why an upstream call produced no response.
public struct UpstreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; its raw value is short and stable (a metric label).
    public enum Kind: String, Sendable {
        /// The call's deadline passed.
        case timeout
        /// No connection could be made, or it broke before a complete response.
        case connectionFailed = "connection_failed"
        /// TLS handshake or certificate verification failed.
        case tls
        /// The response body or headers exceeded the client's limit.
        case responseTooLarge = "response_too_large"
        /// The response was not valid HTTP, or broke a limit that protects the client.
        case invalidResponse = "invalid_response"
        /// Too many calls were already waiting for a connection to this origin: the call
        /// failed at once rather than queue without bound.
        case saturated
    }

    /// Whether another attempt may succeed: only a connection that failed. A timeout has
    /// spent the caller's time already, and a TLS failure, an oversized or malformed answer
    /// or a full line would only fail again.
    public var isRetryable: Bool { kind == .connectionFailed }

    public let kind: Kind
    /// `origin + path` of the call, e.g. `http://127.0.0.1:8081/groups`.
    public let url: String
    /// What libevent or OpenSSL said, when it said something.
    public let detail: String

    public init(kind: Kind, url: String, detail: String = "") {
        self.kind = kind
        self.url = url
        self.detail = detail
    }

    public var description: String {
        "\(kind.rawValue) calling \(url)" + (detail.isEmpty ? "" : ": \(detail)")
    }
}
