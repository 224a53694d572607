/// A Redis client that speaks RESP by hand over a plain loopback socket, for tests that play
/// someone with access to a fleet's Redis but not its secret: it sends exactly the commands
/// it is given (`SET` of a forged lease, `PUBLISH` of a forged state) and reads the replies,
/// and, once subscribed, the messages others publish (a genuine one to play back).
///
/// ```swift
/// let redis = try await RawRedisClient(port: server.port)
/// let keys = try await redis.command("KEYS", "*").strings           // what anyone can read
/// _ = try await redis.command("PUBLISH", channel, "NOT JSON")
/// let spy = try await RawRedisClient(port: server.port)
/// _ = try await spy.command("SUBSCRIBE", channel)                   // then: spy.nextMessage()
/// ```
public final class RawRedisClient {
    private let connection: TestConnection

    public init(port: UInt16) async throws {
        connection = try await TestConnection(port: port)
    }

    /// Sends a command of text arguments and reads its reply.
    public func command(_ arguments: String...) async throws -> RESPValue {
        try await command(arguments.map { Array($0.utf8) })
    }

    /// Sends a command of binary arguments and reads its reply.
    public func command(_ arguments: [[UInt8]]) async throws -> RESPValue {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.count)\r\n".utf8) + argument + Array("\r\n".utf8)
        }
        try await connection.send(bytes)
        return try await read()
    }

    /// The payload of the next message on a channel this client subscribed to.
    public func nextMessage() async throws -> [UInt8] {
        while true {
            if case .array(let parts?) = try await read(), parts.count == 3, parts[0].text == "message", case .bulk(let payload?) = parts[2] {
                return payload
            }
        }
    }

    /// Reads one reply.
    public func read() async throws -> RESPValue {
        let line = try await connection.read(until: Array("\r\n".utf8))
        guard let kind = line.first else { throw TestClientError.malformed("empty RESP line") }
        let rest = String(decoding: line.dropFirst(), as: UTF8.self)
        switch kind {
        case UInt8(ascii: "+"): return .simple(rest)
        case UInt8(ascii: "-"): return .error(rest)
        case UInt8(ascii: ":"):
            guard let value = Int64(rest) else { throw TestClientError.malformed("RESP integer \(rest)") }
            return .integer(value)
        case UInt8(ascii: "$"):
            guard let length = Int(rest) else { throw TestClientError.malformed("RESP bulk length \(rest)") }
            guard length >= 0 else { return .bulk(nil) }
            let bytes = try await connection.read(count: length + 2)
            return .bulk(Array(bytes.dropLast(2)))
        case UInt8(ascii: "*"):
            guard let count = Int(rest) else { throw TestClientError.malformed("RESP array length \(rest)") }
            guard count >= 0 else { return .array(nil) }
            var elements: [RESPValue] = []
            for _ in 0..<count { elements.append(try await read()) }
            return .array(elements)
        default:
            throw TestClientError.malformed("RESP type \(kind)")
        }
    }

    public func close() {
        connection.close()
    }
}

/// One RESP2 reply.
public indirect enum RESPValue: Sendable, Equatable {
    case simple(String)
    case error(String)
    case integer(Int64)
    case bulk([UInt8]?)
    case array([RESPValue]?)

    /// A simple or bulk string as text.
    public var text: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let bytes?): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }

    /// The bytes of a bulk string.
    public var bytes: [UInt8]? {
        if case .bulk(let bytes?) = self { return bytes }
        return nil
    }

    /// The elements of an array as text (`KEYS`, `ZRANGE`, `PUBSUB CHANNELS`).
    public var strings: [String] {
        if case .array(let elements?) = self { return elements.compactMap(\.text) }
        return []
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
}
