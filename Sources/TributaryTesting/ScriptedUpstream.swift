public import EventLoop
public import HTTPCore
import HTTPServer

/// What a ``ScriptedUpstream`` answers to one request.
public struct UpstreamReply: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// Answer after this long (the client may close meanwhile: that is recorded).
    public var delay: Duration
    /// Never answer; wait for the client to close the connection.
    public var hangs: Bool
    /// Answer only once the requests received so far satisfy this (checked as each request
    /// arrives): answers held until, say, every client's list call is in go out together,
    /// however slowly a loaded machine made each request.
    public var releasedWhen: (@Sendable ([RecordedRequest]) -> Bool)?

    public init(status: Int = 200, headers: [(String, String)] = [], body: [UInt8] = [], delay: Duration = .zero, hangs: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.hangs = hangs
    }

    public static func json(_ text: String, status: Int = 200, delay: Duration = .zero) -> Self {
        Self(status: status, headers: [("Content-Type", "application/json")], body: Array(text.utf8), delay: delay)
    }

    public static func text(_ text: String, status: Int = 200, delay: Duration = .zero) -> Self {
        Self(status: status, headers: [("Content-Type", "text/plain")], body: Array(text.utf8), delay: delay)
    }

    public static let hang = Self(hangs: true)

    /// This answer held until the requests received satisfy `condition` (``releasedWhen``).
    public func held(until condition: @escaping @Sendable ([RecordedRequest]) -> Bool) -> Self {
        var reply = self
        reply.releasedWhen = condition
        return reply
    }
}

/// One request a ``ScriptedUpstream`` received, and how it ended.
public struct RecordedRequest: Sendable {
    public let method: HTTPMethod
    /// The request target as sent (path and query, still percent-encoded).
    public let uri: String
    public let path: String
    public let query: [String: String]
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]
    /// The client's port: requests with the same port came over the same connection.
    public let clientPort: UInt16
    public let startedAt: ContinuousClock.Instant
    public internal(set) var endedAt: ContinuousClock.Instant?
    /// The client closed the connection before the answer was sent (it cancelled).
    public internal(set) var closedByClient = false

    public var inFlight: Bool { endedAt == nil }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// A real HTTP upstream for tests, listening on loopback on a port of its own (its own event
/// loop thread), that answers by script and records every request: what was asked, when it
/// ended, and whether the client closed it first, i.e. whether cancellation reached it.
///
/// ```swift
/// let upstream = try await ScriptedUpstream.start { request in
///     request.path == "/slow" ? .hang : .json(#"{"result":[]}"#)
/// }
/// let cancelled = await upstream.records.wait(timeout: .seconds(2)) { $0.first?.closedByClient == true }
/// ```
public final class ScriptedUpstream: Sendable {
    public let port: UInt16
    public let records: Observed<[RecordedRequest]>
    private let thread: LoopThread
    private let server: LoopBound<HTTPServer>

    private init(
        port: UInt16, host: String, isTLS: Bool, records: Observed<[RecordedRequest]>, thread: LoopThread,
        server: LoopBound<HTTPServer>, held: LoopBound<HeldReplies>
    ) {
        self.port = port
        self.host = host
        self.isTLS = isTLS
        self.records = records
        self.thread = thread
        self.server = server
        self.held = held
    }

    private let isTLS: Bool
    private let host: String
    private let held: LoopBound<HeldReplies>

    /// Dropped without ``shutdown()`` (its test threw), the server still goes on its loop.
    deinit {
        let server = self.server, held = self.held
        thread.stopWithoutWaiting {
            server.release()
            held.release()
        }
    }

    /// `http://127.0.0.1:PORT` (`http://[::1]:PORT` on IPv6), or `https://localhost:PORT` with
    /// TLS (the test certificate's name).
    public var baseURL: String {
        if isTLS { return "https://localhost:\(port)" }
        return host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
    }

    /// Listens on `host` (a loopback address: `127.0.0.1` or `::1`) on a free port.
    public static func start(
        tls: TLSContext? = nil, host: String = "127.0.0.1", script: @escaping @Sendable (RecordedRequest) -> UpstreamReply
    ) async throws -> ScriptedUpstream {
        let thread = try LoopThread()
        let records = Observed<[RecordedRequest]>([])
        let (port, server, held) = try await thread.run { loop in
            let held = HeldReplies()
            let server = try HTTPServer(loop: loop, tls: tls) { request in
                answer(request, loop: loop, records: records, held: held, script: script)
            }
            let port = try server.bind(host: host, port: 0)
            return (port, LoopBound(server, loop: loop), LoopBound(held, loop: loop))
        }
        return ScriptedUpstream(port: port, host: host, isTLS: tls != nil, records: records, thread: thread, server: server, held: held)
    }

    /// Requests received so far.
    public var requests: [RecordedRequest] { records.value }

    /// Checks the held answers' conditions again, for conditions that read more than the
    /// requests (a flag the test sets once the client has done something): those now met are sent.
    public func releaseHeld() async throws {
        let held = self.held, records = self.records
        try await thread.run { _ in held.value.release(given: records.value) }
    }

    /// Stops listening and closes every connection.
    public func shutdown() async {
        let server = self.server, held = self.held
        await thread.stop {
            server.release()
            held.release()
        }
    }

    /// Answers waiting on a ``UpstreamReply/releasedWhen`` condition (loop-confined).
    final class HeldReplies {
        private var waiting: [(condition: ([RecordedRequest]) -> Bool, send: () -> Void)] = []

        func hold(until condition: @escaping ([RecordedRequest]) -> Bool, _ send: @escaping () -> Void) {
            waiting.append((condition, send))
        }

        /// Sends every held answer whose condition `requests` now satisfy.
        func release(given requests: [RecordedRequest]) {
            var ready: [() -> Void] = []
            waiting.removeAll { entry in
                guard entry.condition(requests) else { return false }
                ready.append(entry.send)
                return true
            }
            for send in ready { send() }
        }
    }

    private static func answer(
        _ request: ServerRequest, loop: EventLoop, records: Observed<[RecordedRequest]>, held: HeldReplies,
        script: @Sendable (RecordedRequest) -> UpstreamReply
    ) {
        let recorded = RecordedRequest(
            method: request.method, uri: request.uri, path: request.path, query: request.queryParameters,
            headers: request.headers, body: request.body, clientPort: request.peer?.port ?? 0,
            startedAt: .now)
        var position = 0
        records.update { list in
            position = list.count
            list.append(recorded)
        }
        let index = position
        let reply = script(recorded)
        let end: @Sendable (Bool) -> Void = { closedByClient in
            records.update { list in
                list[index].endedAt = .now
                list[index].closedByClient = closedByClient
            }
        }
        let send = {
            guard request.isOpen else { return }
            end(false)
            request.respond(status: reply.status, headers: reply.headers, body: reply.body)
        }
        request.onDisconnect = { end(true) }
        if reply.hangs { return }
        // This request may be what a held answer waits for, its own included.
        if let condition = reply.releasedWhen { held.hold(until: condition, send) }
        held.release(given: records.value)
        if reply.releasedWhen != nil { return }
        if reply.delay > .zero {
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .init(reply.delay)), send)
        } else {
            send()
        }
    }
}

extension [RecordedRequest] {
    /// The largest number of these requests in flight at one moment.
    public var maxInFlight: Int {
        Self.peak(of: map { ($0.startedAt, $0.endedAt ?? .now) })
    }

    /// The largest number of connections in use at one moment, each counted from the start of
    /// its first request to the end of its last one (a connection is its client port). Unlike
    /// a count of the server's open sockets, which learns of a client's close a moment late,
    /// this does not see a connection closed and another opened in its place overlap.
    public var maxConnectionsInUse: Int {
        let spans = Dictionary(grouping: self, by: \.clientPort).values.map { requests in
            (requests.map(\.startedAt).min()!, requests.map { $0.endedAt ?? .now }.max()!)
        }
        return Self.peak(of: spans)
    }

    /// The most of `spans` that overlap at one moment (one ending as another starts: no overlap).
    private static func peak(of spans: [(start: ContinuousClock.Instant, end: ContinuousClock.Instant)]) -> Int {
        var edges: [(at: ContinuousClock.Instant, step: Int)] = []
        for span in spans {
            edges.append((span.start, 1))
            edges.append((span.end, -1))
        }
        edges.sort { $0.at == $1.at ? $0.step < $1.step : $0.at < $1.at }
        var level = 0
        var peak = 0
        for edge in edges {
            level += edge.step
            peak = Swift.max(peak, level)
        }
        return peak
    }
}
