/// One Redis command: its name and arguments as binary-safe byte strings (sent with
/// `redisAsyncCommandArgv`, so nothing is formatted or escaped), and its deadline.
///
/// ```swift
/// RedisCommand("SET", "snapshot:groups", documentBytes, "PX", 3000)
/// RedisCommand("GET", "snapshot:groups", timeout: .milliseconds(200))
/// ```
public struct RedisCommand: Sendable, Hashable, CustomStringConvertible {
    /// The name first, then the arguments.
    public var arguments: [[UInt8]]
    /// How long to wait for the reply; nil: the client's ``RedisClient/Configuration/commandTimeout``.
    public var timeout: Duration?

    public init(_ name: String, _ arguments: any RedisArgument..., timeout: Duration? = nil) {
        self.arguments = [Array(name.utf8)] + arguments.map(\.redisBytes)
        self.timeout = timeout
    }

    /// A command from raw byte strings, the name first.
    public init(arguments: [[UInt8]], timeout: Duration? = nil) {
        self.arguments = arguments
        self.timeout = timeout
    }

    /// The command's name, upper-cased (`"GET"`).
    public var name: String {
        String(decoding: arguments.first ?? [], as: UTF8.self).uppercased()
    }

    public var description: String { name }

    /// Why this command cannot go through a shared command connection, or nil.
    ///
    /// hiredis 0.14 switches a connection into pub/sub mode on `(P)SUBSCRIBE`, treats
    /// `(P)UNSUBSCRIBE` as having no reply of its own and `MONITOR` as an endless stream, and
    /// knows nothing of Redis 7's sharded `SSUBSCRIBE`: each would misalign every reply after
    /// it. Pub/sub goes through ``RedisClient/subscribe(to:)``. (Commands that change the
    /// connection for those after them, `SELECT`, `RESET`, `HELLO 3`, are not refused, but
    /// have no place on a shared connection either.)
    var refusal: RedisError? {
        guard !arguments.isEmpty else { return RedisError(.invalidCommand, "empty command") }
        guard !Self.connectionModeCommands.contains(name) else {
            return RedisError(.invalidCommand, "\(name) cannot be sent as a command: use subscribe(to:)")
        }
        return nil
    }

    private static let connectionModeCommands: Set<String> = [
        "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE", "MONITOR",
    ]
}

/// A value that can be a Redis command argument: text as UTF-8, bytes as they are, integers
/// in decimal.
public protocol RedisArgument: Sendable {
    var redisBytes: [UInt8] { get }
}

extension String: RedisArgument {
    public var redisBytes: [UInt8] { Array(utf8) }
}

extension Substring: RedisArgument {
    public var redisBytes: [UInt8] { Array(utf8) }
}

extension Array: RedisArgument where Element == UInt8 {
    public var redisBytes: [UInt8] { self }
}

extension Int: RedisArgument {
    public var redisBytes: [UInt8] { Array(String(self).utf8) }
}

extension Int64: RedisArgument {
    public var redisBytes: [UInt8] { Array(String(self).utf8) }
}
