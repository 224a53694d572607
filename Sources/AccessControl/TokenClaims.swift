import JWTKit

/// The claims of a token that the service reads: who (`sub`), for whom (`iss`, `aud`), when
/// (`exp`, `nbf`), and what it may do (`scope`, or `scp`). Decoded by jwt-kit's parser; the
/// checks are the ``TokenVerifier``'s, made where the request is, without a suspension.
struct TokenClaims: JWTPayload {
    let sub: String?
    let iss: String?
    /// `aud`: one string or an array of them (RFC 7519 §4.1.3).
    let aud: StringOrList?
    /// Seconds since 1970 (RFC 7519 NumericDate; fractions allowed).
    let exp: Double?
    let nbf: Double?
    /// `scope`: space-separated (RFC 8693 §4.2).
    let scope: String?
    /// `scp`: an array, or a space-separated string (as some issuers write it).
    let scp: StringOrList?

    /// Every scope the token grants, from `scope` and `scp`.
    var scopes: Set<String> {
        var scopes = Set((scope ?? "").split(separator: " ").map(String.init))
        switch scp {
        case .one(let text): scopes.formUnion(text.split(separator: " ").map(String.init))
        case .list(let list): scopes.formUnion(list)
        case nil: break
        }
        return scopes
    }

    /// The checks are made by ``TokenVerifier`` (synchronously, on the request's loop).
    func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// A claim that is a string or an array of strings.
    enum StringOrList: Codable, Sendable {
        case one(String)
        case list([String])

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                self = .one(text)
            } else {
                self = .list(try container.decode([String].self))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .one(let text): try container.encode(text)
            case .list(let list): try container.encode(list)
            }
        }

        func contains(_ value: String) -> Bool {
            switch self {
            case .one(let text): text == value
            case .list(let list): list.contains(value)
            }
        }
    }
}
