package import HTTPServer

/// Why a request's token does not let it in, answered as RFC 6750 §3 says: 401 with a
/// `WWW-Authenticate: Bearer realm="tributary"` challenge (with `error="invalid_token"` for a
/// token that is there but not good), or 403 `insufficient_scope` naming the scopes needed.
/// The body is the service's usual JSON error; nothing of the token is ever in it.
package enum AuthFailure: Error, Equatable {
    /// No token, where one is required.
    case missing
    /// A token that failed verification; `reason` says which check, in the service's words.
    case invalid(reason: String)
    /// A good token without every scope in `needed`.
    case insufficientScope(needed: [String])

    package static let realm = "Bearer realm=\"tributary\""

    package var error: HTTPError {
        switch self {
        case .missing:
            HTTPError(status: 401, code: "unauthorized", message: "this needs a bearer token (Authorization: Bearer, the tributary_token cookie or access_token)")
        case .invalid(let reason):
            HTTPError(status: 401, code: "unauthorized", message: "the bearer token is not accepted: \(reason)")
        case .insufficientScope(let needed):
            HTTPError(status: 403, code: "forbidden", message: "the bearer token lacks a scope this needs (\(needed.joined(separator: " ")))")
        }
    }

    /// The `WWW-Authenticate` challenge.
    var challenge: String {
        switch self {
        case .missing: Self.realm
        case .invalid: Self.realm + ", error=\"invalid_token\""
        case .insufficientScope(let needed): Self.realm + ", error=\"insufficient_scope\", scope=\"\(needed.joined(separator: " "))\""
        }
    }

    func answer(_ request: ServerRequest) {
        request.respond(error, headers: [("WWW-Authenticate", challenge)])
    }
}
