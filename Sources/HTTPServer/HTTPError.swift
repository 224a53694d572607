import HTTPCore

/// An error answered to an HTTP client as `{"error":{"code":"…","message":"…"}}`.
///
/// The small error vocabulary of Tributary: every failure a client sees has a status, a
/// stable machine-readable `code` (safe as a metric label) and a human-readable message.
///
/// ```swift
/// request.respond(HTTPError(status: 404, code: "not_found", message: "no route for /nope"))
/// ```
public struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String

    public init(status: Int, code: String, message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// The JSON document sent as the response body.
    public var json: String { JSONWriter.error(code: code, message: message) }

    public var description: String { "\(status) \(code): \(message)" }
}

extension HTTPError {
    public static func notFound(_ message: String) -> Self { Self(status: 404, code: "not_found", message: message) }
    public static func badRequest(_ message: String) -> Self { Self(status: 400, code: "bad_request", message: message) }
    public static func methodNotAllowed(_ message: String) -> Self {
        Self(status: 405, code: "method_not_allowed", message: message)
    }
    /// A request whose framing a proxy could read otherwise than this server (RFC 9112 §6.3):
    /// answered with `Connection: close`.
    public static func malformedRequest(_ message: String) -> Self {
        Self(status: 400, code: "malformed_request", message: message)
    }
    public static func headersTooLarge(limit: Int) -> Self {
        Self(status: 431, code: "headers_too_large", message: "request headers exceed \(limit) bytes")
    }
    public static func bodyTooLarge(limit: Int) -> Self {
        Self(status: 413, code: "body_too_large", message: "request body exceeds \(limit) bytes")
    }
}
