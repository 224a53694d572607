import HTTPServer
import TributaryConfiguration

/// Where a request carries its bearer token, in this order: `Authorization: Bearer T`
/// (RFC 6750 §2.1); the cookie `tributary_token`, which an `EventSource` sends by itself;
/// the query parameter `access_token` (RFC 6750 §2.3), for a client that can set neither
/// (never logged: the service's `RedactedTarget` cuts it out). Every route that reads a token
/// reads it the same way.
package enum BearerToken {
    static let cookieName = "tributary_token"
    package static var queryName: String { ServiceQueryParameter.accessToken }

    /// The token `request` carries, or nil. An `Authorization` header of another scheme
    /// (`Basic …`) carries none.
    static func of(_ request: ServerRequest) -> String? {
        if let header = request.header("Authorization"), let token = bearer(header) { return token }
        if let cookies = request.header("Cookie"), let token = cookie(cookies) { return token }
        if request.query != nil, let token = request.queryParameters[queryName], !token.isEmpty { return token }
        return nil
    }

    /// `T` of `Bearer T` (the scheme case-insensitive, RFC 9110 §11.1).
    static func bearer(_ header: String) -> String? {
        let utf8 = header.utf8
        guard utf8.count > 7, utf8.prefix(6).map({ $0 | 0x20 }) == Array("bearer".utf8), utf8.dropFirst(6).first == UInt8(ascii: " ") else {
            return nil
        }
        let token = header.dropFirst(7).drop { $0 == " " }
        return token.isEmpty ? nil : String(token)
    }

    /// The value of the cookie `tributary_token` in a `Cookie` header (RFC 6265 §5.4).
    static func cookie(_ header: String) -> String? {
        for pair in header.split(separator: ";") {
            let trimmed = pair.drop { $0 == " " }
            guard trimmed.hasPrefix(cookieName + "=") else { continue }
            let value = trimmed.dropFirst(cookieName.count + 1)
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }
}
