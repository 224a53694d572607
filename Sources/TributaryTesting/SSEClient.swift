/// One server-sent event as a browser's `EventSource` would dispatch it.
public struct ServerSentEvent: Sendable, Equatable {
    public var type: String
    public var data: String
    /// The `id` field of this event, if it had one.
    public var id: String?
}

/// Parses `text/event-stream` per the WHATWG HTML standard (§9.2.6): lines end in CRLF, LF
/// or CR; `event`, `data` (lines joined by LF), `id`, `retry`; `:` starts a comment; a blank
/// line dispatches (nothing when there is no data).
public struct SSEParser: Sendable {
    public private(set) var retry: Int?
    public private(set) var comments: [String] = []
    /// The order fields and events came in: "retry", "comment", "event".
    public private(set) var log: [String] = []
    private var pending: [UInt8] = []
    private var skipLineFeed = false
    private var type = ""
    private var data: [String] = []
    private var id: String?

    public init() {}

    /// Feeds bytes; returns the events they completed.
    public mutating func feed(_ bytes: [UInt8]) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if skipLineFeed {
                skipLineFeed = false
                if byte == 0x0A { continue }
            }
            if byte == 0x0A || byte == 0x0D {
                skipLineFeed = byte == 0x0D
                if let event = line(pending) { events.append(event) }
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(byte)
            }
        }
        return events
    }

    /// One line, split into field name and value by bytes, as the standard says (by code
    /// points, not Swift's grapheme clusters: a combining mark after `data: ` must not glue
    /// itself to the space).
    private mutating func line(_ line: [UInt8]) -> ServerSentEvent? {
        if line.isEmpty { return dispatch() }
        if line.first == UInt8(ascii: ":") {
            comments.append(String(decoding: line.dropFirst(), as: UTF8.self))
            log.append("comment")
            return nil
        }
        let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? line.endIndex
        let name = String(decoding: line[..<colon], as: UTF8.self)
        var valueStart = colon < line.endIndex ? colon + 1 : colon
        if valueStart < line.endIndex && line[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
        let value = String(decoding: line[valueStart...], as: UTF8.self)
        switch name {
        case "event": type = value
        case "data": data.append(value)
        case "id": if !value.contains("\0") { id = value }
        case "retry":
            if !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let milliseconds = Int(value) {
                retry = milliseconds
                log.append("retry")
            }
        default: break
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            type = ""
            data = []
            id = nil
        }
        guard !data.isEmpty else { return nil }
        log.append("event")
        return ServerSentEvent(type: type.isEmpty ? "message" : type, data: data.joined(separator: "\n"), id: id)
    }
}

/// A `GET` with `Accept: text/event-stream` over a ``TestConnection``, read as events; waiting
/// for an event suspends the task (see ``TestConnection``). Use it from one task at a time.
///
/// ```swift
/// let stream = try await SSEClient(port: port, path: "/groups")
/// let announcement = try await stream.next()          // event: stream
/// let snapshot = try await stream.next(type: "snapshot")
/// ```
public final class SSEClient {
    public let connection: TestConnection
    public let head: TestResponse
    public private(set) var parser = SSEParser()
    private var queue: [ServerSentEvent] = []
    private let chunked: Bool

    public init(
        port: UInt16, path: String, headers: [(String, String)] = [], timeout: Duration = .seconds(10), receiveBuffer: Int? = nil
    ) async throws {
        connection = try await TestConnection(port: port, timeout: timeout, receiveBuffer: receiveBuffer)
        try await connection.sendRequest("GET", path, headers: [("Accept", "text/event-stream")] + headers)
        head = try await connection.readHead()
        chunked = head.header("Transfer-Encoding")?.lowercased().contains("chunked") == true
    }

    /// The next event (of `type`, if given: others on the way are skipped); throws on timeout
    /// or when the stream ends.
    public func next(type: String? = nil) async throws -> ServerSentEvent {
        while true {
            while !queue.isEmpty {
                let event = queue.removeFirst()
                if type == nil || event.type == type { return event }
            }
            let bytes: [UInt8]
            if chunked {
                guard let chunk = try await connection.readChunk() else { throw TestClientError.closed(received: []) }
                bytes = chunk
            } else {
                bytes = try await connection.readAvailable()
            }
            queue += parser.feed(bytes)
        }
    }

    /// Reads until a comment line arrives; returns it (without the leading `:`).
    public func nextComment() async throws -> String {
        let seen = parser.comments.count
        while parser.comments.count == seen {
            let bytes = chunked ? try await connection.readChunk() : try await connection.readAvailable()
            guard let bytes else { throw TestClientError.closed(received: []) }
            queue += parser.feed(bytes)
        }
        return parser.comments[seen]
    }

    /// Reads until the server ends the stream; the events that came before the end.
    public func readToEnd() async throws -> [ServerSentEvent] {
        var events = queue
        queue = []
        while let chunk = try await connection.readChunk() { events += parser.feed(chunk) }
        return events
    }

    public func close() { connection.close() }
}

/// One task at a time, like its ``TestConnection``.
@available(*, unavailable)
extension SSEClient: Sendable {}

extension TestConnection {
    /// Whatever bytes are buffered or arrive next; throws at EOF or timeout.
    func readAvailable() async throws -> [UInt8] {
        if !bufferedBytes.isEmpty { return takeBuffered() }
        guard try await fill() else { throw TestClientError.closed(received: []) }
        return takeBuffered()
    }
}
