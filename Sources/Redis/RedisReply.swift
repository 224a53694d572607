internal import CHiredis

/// One reply from Redis (RESP2), copied out of hiredis' `redisReply` so it outlives the
/// callback that delivered it.
///
/// Bulk strings are bytes (Redis values are binary-safe); status and error lines are text.
///
/// ```swift
/// switch reply {
/// case .string(let bytes): use(bytes)
/// case .null: missing()
/// case .error(let message): log(message)        // e.g. "WRONGTYPE Operation against …"
/// default: break
/// }
/// ```
public enum RedisReply: Sendable, Hashable, CustomStringConvertible {
    /// A bulk string: binary-safe bytes (`GET`, `ECHO`, elements of `LRANGE`).
    case string([UInt8])
    /// A status line, e.g. `OK` or `PONG`.
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    /// A null bulk string or array (a missing key, a `BLPOP` that timed out).
    case null
    /// An error Redis answered, e.g. `WRONGTYPE Operation against a key holding the wrong kind of value`.
    case error(String)

    /// The bytes of a bulk string, or nil.
    public var bytes: [UInt8]? {
        if case .string(let bytes) = self { return bytes }
        return nil
    }

    /// A bulk string or status as text (UTF-8, invalid sequences repaired), or nil.
    public var text: String? {
        switch self {
        case .string(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let status): status
        default: nil
        }
    }

    /// The value of an integer reply (`INCR`, `PUBLISH`'s receiver count), or nil.
    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of an array reply (`LRANGE`, `EXEC`, pub/sub pushes), or nil.
    public var array: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The message of an error reply, or nil.
    public var errorMessage: String? {
        if case .error(let message) = self { return message }
        return nil
    }

    public var description: String {
        switch self {
        case .string(let bytes): "\"\(String(decoding: bytes, as: UTF8.self))\""
        case .status(let status): status
        case .integer(let value): "(integer) \(value)"
        case .array(let elements): "[" + elements.map(\.description).joined(separator: ", ") + "]"
        case .null: "(nil)"
        case .error(let message): "(error) \(message)"
        }
    }

    /// Copies a reply hiredis owns (it frees it when the callback returns).
    init(_ reply: UnsafePointer<redisReply>) {
        let reply = reply.pointee
        switch reply.type {
        case REDIS_REPLY_STRING:
            self = .string(Self.bytes(reply.str, reply.len))
        case REDIS_REPLY_STATUS:
            self = .status(String(decoding: Self.bytes(reply.str, reply.len), as: UTF8.self))
        case REDIS_REPLY_ERROR:
            self = .error(String(decoding: Self.bytes(reply.str, reply.len), as: UTF8.self))
        case REDIS_REPLY_INTEGER:
            self = .integer(reply.integer)
        case REDIS_REPLY_ARRAY:
            let elements = UnsafeBufferPointer(start: reply.element, count: reply.elements)
            self = .array(elements.map { element in element.map { RedisReply(UnsafePointer($0)) } ?? .null })
        default:
            self = .null
        }
    }

    private static func bytes(_ pointer: UnsafeMutablePointer<CChar>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
}
