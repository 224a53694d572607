import CEvhttpRequestFields
import CLibevent
import EventLoop
public import HTTPCore
public import Telemetry

/// One HTTP request received by an ``HTTPServer``, and the way to answer it.
///
/// A handler answers at once or later (after upstream calls): the request stays *open*
/// until ``respond(status:headers:body:)`` or the end of a stream. While it is open the server
/// watches the client's connection, and ``onDisconnect`` runs if the client goes away, so the
/// handler can cancel its work. Loop-confined.
///
/// ```swift
/// server.handler = { request in
///     let call = client.execute(upstreamRequest) { result in request.respond(status: 200, body: ...) }
///     request.onDisconnect = { call.cancel() }
/// }
/// ```
///
/// Ownership: libevent owns the `evhttp_request`. This object borrows it until the answer is
/// handed back to libevent (or, after a disconnect, until it frees the detached request).
public final class ServerRequest {
    /// Where the request is in its life.
    public enum State: Sendable, Equatable {
        /// The handler has not answered yet.
        case open
        /// A streamed (chunked) answer is being written.
        case streaming
        /// The answer was handed to libevent.
        case finished
        /// The client went away before the answer was complete.
        case disconnected
    }

    public let method: HTTPMethod
    public internal(set) var state: State = .open
    /// Path parameters filled in by a ``Router`` match, e.g. `["id": "42"]`.
    public var parameters: [String: String] = [:]
    /// The pattern of the route that handled it (`/streams/{id}/triggers/{name}`), for logs
    /// and metrics.
    public var route: String?
    /// Headers added to whatever answer the request gets (e.g. CORS).
    public var responseHeaders: [(String, String)] = []
    /// Runs once if the client disconnects while the request is open or streaming.
    public var onDisconnect: (() -> Void)?
    /// Runs each time a streamed answer's output has been fully written to the socket.
    public var onDrained: (() -> Void)?
    /// Told what ``onDrained`` and ``onDisconnect`` are told, through one reference: a stream
    /// that lives for hours holds no closure contexts for it (two allocations per subscriber).
    /// Unowned: the follower owns the request, and must outlive its answer or end it first.
    public unowned(safe) var follower: (any StreamFollower)?
    /// Bytes the stream's client accepts at any moment (for an event stream, a comment):
    /// written when the client sends EOF, to tell a half-close (the client takes them) from a
    /// client that is gone (its socket answers with a reset). Without it, EOF ends the stream.
    public var livenessProbe: [UInt8]?

    /// When the request was received.
    public let receivedAt: ContinuousClock.Instant
    /// The status answered (set when the answer or the stream starts).
    public internal(set) var status: Int?

    /// The `evhttp_request`, while borrowed (nil once finished or disconnected).
    var raw: OpaquePointer?
    /// Weak: a pipeline may answer after the server is gone (the answer is then dropped),
    /// and a server freeing its connections closes its open requests from its deinit.
    weak var server: HTTPServer?
    let connection: ServerConnection
    /// Whether the request is its connection's open request (see `+Disconnect`).
    var isWatchingConnection = false
    /// Whether this stream frames its own chunks rather than evhttp (see `+Streaming`).
    var framesChunks = false

    init(raw: OpaquePointer, method: HTTPMethod, server: HTTPServer, connection: ServerConnection) {
        self.raw = raw
        self.method = method
        self.server = server
        self.connection = connection
        receivedAt = .now
        uri = evhttp_request_get_uri(raw).map { String(cString: $0) } ?? ""
    }

    /// Whether the handler may still answer.
    public var isOpen: Bool { state == .open || state == .streaming }

    // MARK: - Reading the request

    /// The request target as sent, e.g. `/groups?x=1` (kept after the answer, for the access log).
    public let uri: String

    /// The path, still percent-encoded, e.g. `/streams/ab%2Fc/inputs/q`.
    public private(set) lazy var path: String = {
        guard let raw, let parsed = evhttp_request_get_evhttp_uri(raw), let path = evhttp_uri_get_path(parsed)
        else { return "/" }
        let text = String(cString: path)
        return text.isEmpty ? "/" : text
    }()

    /// The query string without `?`, or nil.
    public private(set) lazy var query: String? = {
        guard let raw, let parsed = evhttp_request_get_evhttp_uri(raw), let query = evhttp_uri_get_query(parsed)
        else { return nil }
        return String(cString: query)
    }()

    /// Query parameters, percent-decoded (`+` is a space); the last value of a repeated name
    /// wins. Empty once a stream has started (``releaseHead(_:)``).
    public private(set) lazy var queryParameters: [String: String] = QueryString.parse(query ?? "")

    /// The trace the request belongs to: its `traceparent` and `tracestate` when valid, else a
    /// new trace (``TraceContext``). Fixed on first read, which must come while the request is
    /// open (its headers are gone once it is answered): the router reads it first thing.
    public private(set) lazy var traceContext = TraceContext(traceparent: header("traceparent"), tracestate: header("tracestate"))

    /// The request's SERVER span, when tracing is on (``adopt(_:)``).
    public private(set) var span: TracedSpan?

    /// Makes `span` the request's SERVER span: its trace becomes the request's
    /// ``traceContext``, so the upstream calls the request causes are its children.
    public func adopt(_ span: TracedSpan) {
        self.span = span
        traceContext = span.trace
    }

    /// The value of a request header (names compare case-insensitively), or nil. Once a
    /// stream has started, only `Connection` is kept (``releaseHead(_:)``).
    public func header(_ name: String) -> String? {
        guard let raw else { return nil }
        let input = evhttp_request_get_input_headers(raw)
        return name.withCString { name in evhttp_find_header(input, name).map { String(cString: $0) } }
    }

    /// Every request header in the order received (`Connection` alone once a stream has
    /// started: ``releaseHead(_:)``).
    public var headers: [(name: String, value: String)] {
        guard let raw else { return [] }
        return HeaderList.entries(of: evhttp_request_get_input_headers(raw))
    }

    /// The request body (empty when there is none).
    public private(set) lazy var body: [UInt8] = {
        guard let raw, let buffer = evhttp_request_get_input_buffer(raw) else { return [] }
        return EventBuffer.bytes(of: buffer)
    }()

    /// Lets go of what the request's head took once a stream's own head is written: a stream
    /// stays open for hours, and 10,000 of them each holding its request's headers, parsed
    /// target, query parameters and answer headers held over a kilobyte apiece that nothing
    /// reads again (a stream's parameters are read when it opens). The path, query and trace
    /// context are read first and kept; the headers keep `Connection`, which evhttp reads again when the
    /// stream ends. Its deadline timer goes too (``ServerConnection/streamStarted()``).
    func releaseHead(_ raw: OpaquePointer) {
        _ = path
        _ = query
        _ = traceContext  // read from the headers, which go next
        queryParameters = [:]
        responseHeaders = []
        tributary_evhttp_request_release_head(raw)
        connection.streamStarted()
    }

    /// The client's address and port, e.g. `("127.0.0.1", 50312)`; nil once the connection
    /// is closed.
    public var peer: (host: String, port: UInt16)? { connection.peer }

    /// Whether the client connected from this host's loopback (``LoopbackAddress``); false
    /// once the connection is closed.
    public var isFromLoopback: Bool { peer.map { LoopbackAddress.contains($0.host) } ?? false }

    // MARK: - Answering

    /// Answers the request with a complete response. Ignored unless the request is open.
    ///
    /// A `HEAD` request gets the headers the `GET` would get, `Content-Length` included, and
    /// never the body (evhttp would send the body without the length, which a keep-alive client
    /// then reads as the start of the next answer).
    public func respond(status: Int, headers: [(String, String)] = [], body: some Collection<UInt8>) {
        answer(status: status, headers: headers, body: body, headLength: body.count)
    }

    /// The answer's one way out: `headLength` is the `Content-Length` a `HEAD` answer states
    /// (nil: none, for a body whose length a `GET` would not know either).
    func answer(status: Int, headers: [(String, String)], body: some Collection<UInt8>, headLength: Int?) {
        guard state == .open, let raw else { return }
        stopWatchingConnection()
        addHeaders(headers, to: raw)
        addDate(to: raw)
        if method == .head {
            let output = evhttp_request_get_output_headers(raw)
            if let headLength, evhttp_find_header(output, "Content-Length") == nil {
                evhttp_add_header(output, "Content-Length", String(headLength))
            }
        } else {
            EventBuffer.append(body, to: evhttp_request_get_output_buffer(raw)!)
        }
        if server?.isDraining == true { closeConnectionAfterAnswer(raw) }
        state = .finished
        self.status = status
        self.raw = nil
        evhttp_send_reply(raw, Int32(status), HTTPStatus.reasonPhrase(status), nil)
        connection.writeQueuedAnswer()
        connection.keepReadingOffAfterEOF()
        releaseCallbacks()
        server?.completed(self)
    }

    /// `body` compressed as gzip, for an answer sent `Content-Encoding: gzip`, with the
    /// server's own ``Gzip`` stream.
    public func gzipped(_ body: [UInt8]) -> [UInt8] {
        (server?.gzip ?? Gzip()).compress(body)
    }

    /// Answers with a UTF-8 text body.
    public func respond(status: Int, headers: [(String, String)] = [], text: String) {
        respond(status: status, headers: headers, body: text.utf8)
    }

    /// Answers with a JSON document given as text.
    public func respond(status: Int, json: String, headers: [(String, String)] = []) {
        respond(status: status, headers: [("Content-Type", "application/json")] + headers, body: json.utf8)
    }

    /// Answers with the error's JSON document and status, `Cache-Control: no-store`: an error
    /// says how things were at one moment, and no cache should answer it again later.
    public func respond(_ error: HTTPError, headers: [(String, String)] = []) {
        respond(status: error.status, json: error.json, headers: [("Cache-Control", "no-store")] + headers)
    }

    /// Answers `304 Not Modified` (RFC 9110 §15.4.5): the `headers` the full answer would have
    /// carried that describe it (`ETag`, `Vary`, `Cache-Control`), no body and, for `GET` and
    /// `HEAD` alike, no `Content-Length`.
    public func respondNotModified(headers: [(String, String)]) {
        answer(status: 304, headers: headers, body: [UInt8](), headLength: nil)
    }

    /// Gives the answer the server's ``HTTPDate`` unless it has a `Date` already (evhttp
    /// would write one anew).
    private func addDate(to raw: OpaquePointer) {
        guard let server else { return }
        let output = evhttp_request_get_output_headers(raw)
        if evhttp_find_header(output, "Date") == nil { HeaderList.add("Date", server.date.now(), to: output) }
    }

    /// Sets `headers` on the answer: ``responseHeaders`` first, then `headers`, a later value
    /// replacing an earlier one of the same name, except `Vary`, a list whose values add up
    /// (CORS varies on `Origin`, a resource on `Accept`, its JSON on `Accept-Encoding`).
    func addHeaders(_ headers: [(String, String)], to raw: OpaquePointer) {
        guard !headers.isEmpty || !responseHeaders.isEmpty else { return }
        let output = evhttp_request_get_output_headers(raw)
        for (name, value) in responseHeaders { setHeader(name, value, in: output) }
        for (name, value) in headers { setHeader(name, value, in: output) }
    }

    private func setHeader(_ name: String, _ value: String, in output: UnsafeMutablePointer<evkeyvalq>?) {
        var value = value
        if name.utf8.count == 4, name.lowercased() == "vary", let existing = evhttp_find_header(output, name).map({ String(cString: $0) }) {
            value = Self.mergedVary(existing, value)
        }
        HeaderList.add(name, value, to: output, replacing: true)
    }

    /// `existing`'s names, then those of `added` it lacks (names compare case-insensitively).
    static func mergedVary(_ existing: String, _ added: String) -> String {
        // Most answers merge one bare name into one (`Accept` and `Origin`) or into names this
        // wrote (`Accept, Authorization` and `Accept-Encoding`, where a resource varies on
        // forwarded headers): looked up in place. The arrays of the general case cost some
        // 12,000 instructions on every such answer.
        if Self.isBareName(added), let holds = Self.joinedNames(existing, hold: added) {
            return holds ? existing : existing + ", " + added
        }
        let names = Self.varyNames(in: existing)
        let new = Self.varyNames(in: added).filter { name in !names.contains { HTTPSyntax.equalsIgnoringCase($0, name) } }
        return (names + new).joined(separator: ", ")
    }

    // Over the bytes in place, not through `String.UTF8View`'s generic iteration: it runs for
    // every JSON answer's `Vary`.
    private static func isBareName(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            !bytes.isEmpty && !bytes.contains { $0 == UInt8(ascii: ",") || HTTPSyntax.isWhitespace($0) }
        }
    }

    /// Whether `names`, when they are one name or names joined by `", "` exactly and nothing
    /// else, hold `name` (compared without case); nil when `names` is written any other way.
    private static func joinedNames(_ names: String, hold name: String) -> Bool? {
        var names = names, name = name
        return names.withUTF8 { names in
            name.withUTF8 { name -> Bool? in
                var holds = false
                var start = 0
                while start <= names.count {
                    var end = start
                    while end < names.count, names[end] != UInt8(ascii: ",") { end += 1 }
                    let part = UnsafeBufferPointer(rebasing: names[start..<end])
                    guard !part.isEmpty, !part.contains(where: HTTPSyntax.isWhitespace) else { return nil }
                    holds = holds || HTTPSyntax.equalsIgnoringCase(part, name)
                    guard end < names.count else { break }
                    // ", " and then the next name.
                    guard end + 1 < names.count, names[end + 1] == UInt8(ascii: " ") else { return nil }
                    start = end + 2
                }
                return holds
            }
        }
    }

    /// The names of a `Vary` value, spaces and tabs removed: `"Origin, Accept-Encoding"` is
    /// `["Origin", "Accept-Encoding"]`. Over the UTF-8 bytes: `String.filter` walks
    /// grapheme clusters, where a byte comparison is all a header name needs.
    private static func varyNames(in value: String) -> [String] {
        value.utf8.split(separator: UInt8(ascii: ",")).map { name in
            String(decoding: name.filter { !HTTPSyntax.isWhitespace($0) }, as: UTF8.self)
        }
    }

    /// Marks the answer `Connection: close`: evhttp frees the connection once it is written.
    func closeConnectionAfterAnswer(_ raw: OpaquePointer) {
        let output = evhttp_request_get_output_headers(raw)
        evhttp_remove_header(output, "Connection")
        evhttp_add_header(output, "Connection", "close")
    }

    /// Drops the closures once the request can no longer call them (they often capture it).
    func releaseCallbacks() {
        onDisconnect = nil
        onDrained = nil
        follower = nil
        livenessProbe = nil
    }
}

/// What follows a streamed answer through ``ServerRequest/follower``: the socket took what
/// had waited, or the client went away.
public protocol StreamFollower: AnyObject {
    /// As ``ServerRequest/onDrained``.
    func streamDrained()
    /// As ``ServerRequest/onDisconnect``.
    func streamDisconnected()
}
