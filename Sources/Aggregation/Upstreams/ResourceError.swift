import HTTPCore
import UpstreamClient

/// Why a resource could not be built from its upstreams, in the words a client gets:
/// an HTTP status (502 when an upstream failed, 504 when it timed out, 503 when it should
/// try again later: ``retryAfter``), a stable code and a message that names the upstream and
/// the path that failed.
public struct ResourceError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// No response: connection refused or broken, TLS failure, response too large.
        case upstreamUnavailable = "upstream_unavailable"
        /// The upstream did not answer in time.
        case upstreamTimeout = "upstream_timeout"
        /// Too many calls already wait for a connection to the upstream (503, try again soon).
        case upstreamSaturated = "upstream_saturated"
        /// The upstream's circuit breaker is open: it failed repeatedly and is not called until
        /// its probe is due (503, `Retry-After` says when).
        case upstreamCircuitOpen = "upstream_circuit_open"
        /// The upstream answered with a non-2xx status.
        case upstreamStatus = "upstream_status"
        /// The upstream's body was not JSON, or not shaped as configured.
        case upstreamMalformed = "upstream_malformed"
        /// An item's id cannot name an upstream path (empty, `.` or `..`, not a string or number).
        case invalidItemID = "invalid_item_id"
        /// A batch answer (`details.batch`) did not return an item it was asked for.
        case upstreamItemMissing = "upstream_item_missing"
    }

    public let code: Code
    /// The configured name of the upstream, e.g. `tasks`.
    public let upstream: String
    /// The path called, e.g. `/groups/42/metadata`.
    public let path: String
    public let message: String
    /// Whole seconds (≥ 1) after which asking again may succeed: a 503's `Retry-After`.
    public let retryAfter: Int?

    /// `retryAfter` defaults to 1 second for a 503 and to none otherwise.
    public init(code: Code, upstream: String, path: String, message: String, retryAfter: Int? = nil) {
        self.code = code
        self.upstream = upstream
        self.path = path
        self.message = message
        self.retryAfter = retryAfter ?? ([.upstreamSaturated, .upstreamCircuitOpen].contains(code) ? 1 : nil)
    }

    public var status: Int {
        switch code {
        case .upstreamTimeout: 504
        case .upstreamSaturated, .upstreamCircuitOpen: 503
        default: 502
        }
    }

    /// `duration` in whole seconds, rounded up, at least 1 (what `Retry-After` can say).
    public static func wholeSeconds(_ duration: Duration) -> Int {
        max(1, duration.wholeSecondsRoundedUp)
    }

    public var description: String { message }
}

extension ResourceError {
    init(_ error: UpstreamError, upstream: String, path: String) {
        let code: Code = switch error.kind {
        case .timeout: .upstreamTimeout
        case .saturated: .upstreamSaturated
        default: .upstreamUnavailable
        }
        self.init(code: code, upstream: upstream, path: path, message: "upstream \(upstream): GET \(path) failed: \(error)")
    }
}
