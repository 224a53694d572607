/// The `text/event-stream` wire format (WHATWG HTML §9.2): fields, events, comments.
public enum EventStreamFormat {
    /// The headers of every event stream: no caching, no proxy buffering.
    static let headers: [(String, String)] = [
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache"),
        ("X-Accel-Buffering", "no"),
    ]

    /// The headers of a stream of a per-identity resource: no shared cache may keep it.
    static let privateHeaders: [(String, String)] = [
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "private, no-cache"),
        ("X-Accel-Buffering", "no"),
    ]

    /// `retry: <ms>` — how long the client waits before reconnecting.
    static func retry(_ delay: Duration) -> [UInt8] {
        let (seconds, attoseconds) = delay.components
        return Array("retry: \(seconds * 1000 + attoseconds / 1_000_000_000_000_000)\n".utf8)
    }

    /// One event. `data` may hold line breaks (LF, CR or CRLF): each line becomes its own
    /// `data:` field, which the client joins back with LF.
    public static func event(_ name: String, id: String? = nil, data: [UInt8]) -> [UInt8] {
        head(name, id: id) + body(data)
    }

    /// The fields before an event's data: `event:` and, if given, `id:`.
    static func head(_ name: String, id: String? = nil) -> [UInt8] {
        var head = Array("event: \(name)\n".utf8)
        if let id { head += Array("id: \(id)\n".utf8) }
        return head
    }

    /// An event's `data:` fields (one per line of `data`) and the blank line that ends it.
    static func body(_ data: [UInt8]) -> [UInt8] {
        let prefix = Array("data: ".utf8)
        var body = prefix
        body.reserveCapacity(data.count + 16)
        var index = 0
        while index < data.count {
            let byte = data[index]
            if byte == 0x0A || byte == 0x0D {
                body.append(0x0A)
                body += prefix
                if byte == 0x0D && index + 1 < data.count && data[index + 1] == 0x0A { index += 1 }
            } else {
                body.append(byte)
            }
            index += 1
        }
        body += [0x0A, 0x0A]
        return body
    }

    /// A comment line: ignored by clients, keeps the connection visibly alive.
    static let heartbeat = Array(": heartbeat\n\n".utf8)
}
