internal import CHiredis

/// Why a Redis command got no reply, or why a connection attempt failed.
///
/// A reply that Redis itself sends as an error (`WRONGTYPE …`) is not a `RedisError`: it is
/// the reply ``RedisReply/error(_:)``, because it is an answer, and inside a `MULTI`/`EXEC`
/// array it sits among the other answers.
///
/// ```swift
/// client.send(RedisCommand("GET", "k")) { result in
///     if case .failure(let error) = result, error.kind == .unavailable { runAlone() }
/// }
/// ```
public struct RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kind of failure; its raw value is short and stable (a metric label).
    public enum Kind: String, Sendable {
        /// The command's deadline passed without a reply. It may still run on Redis.
        case timeout
        /// Not connected (or reconnecting): the command was not sent at all.
        case unavailable
        /// The connection broke after the command was sent: it may or may not have run.
        case connectionLost = "connection_lost"
        /// A connection attempt failed: refused, unresolvable, too slow, or setup
        /// (`AUTH`, `SELECT`, `PING`) answered with an error.
        case connectFailed = "connect_failed"
        /// The command cannot be sent through this API (empty, or a pub/sub or `MONITOR`
        /// command, which would switch the shared connection into another mode).
        case invalidCommand = "invalid_command"
    }

    /// What went wrong, as a short stable code.
    public let kind: Kind
    /// What hiredis, the resolver or the deadline said, when there is something to say.
    public let detail: String

    /// An error of `kind`; `detail` is for people (logs), `kind` for code and metrics.
    public init(_ kind: Kind, _ detail: String = "") {
        self.kind = kind
        self.detail = detail
    }

    public var description: String {
        detail.isEmpty ? "redis \(kind.rawValue)" : "redis \(kind.rawValue): \(detail)"
    }

    /// Throws unless `status` is `REDIS_OK`: every hiredis status code passes through here.
    static func check(_ status: Int32, _ kind: Kind, _ call: String) throws(RedisError) {
        guard status == REDIS_OK else { throw RedisError(kind, "\(call) failed") }
    }
}
