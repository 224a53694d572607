import Aggregation
import TributaryConfiguration

/// What tokens and rate limits add to the description: the bearer scheme (`auth.jwt`) on
/// the operations that read a token, required where a resource requires one and optional
/// elsewhere, and the 401, 403 and 429 answers they may give.
extension OpenAPIDocument {
    /// The name of the bearer token's security scheme.
    static let bearerScheme = "bearerToken"

    /// `components.securitySchemes`' entry for tokens, with `auth.jwt`.
    var bearerSchemeEntry: (key: String, value: JSON)? {
        guard configuration.auth.jwt != nil else { return nil }
        return (Self.bearerScheme, .object([
            ("type", .string("http")), ("scheme", .string("bearer")), ("bearerFormat", .string("JWT")),
            ("description", .string(
                "A JWT (HS256, RS256, ES256 or EdDSA) of `auth.jwt`'s issuer and audience: `Authorization: Bearer`, or, for an "
                    + "`EventSource`, the cookie `tributary_token` or the query parameter `access_token`.")),
        ]))
    }

    /// The security requirements of an operation reading the resources of `accesses`: the
    /// bearer scheme, or either it or none (`""`) when no resource requires it.
    func bearerSecurity(_ accesses: [Configuration.ResourceAccess]) -> [String] {
        guard configuration.auth.jwt != nil else { return [] }
        return accesses.contains(where: \.authRequired) ? [Self.bearerScheme] : ["", Self.bearerScheme]
    }

    /// The answers of the resources of `accesses`' tokens and limits; `streams`: the
    /// operation may open an event stream.
    func accessErrors(_ accesses: [Configuration.ResourceAccess], streams: Bool) -> [OpenAPI.ErrorCase] {
        var errors: [OpenAPI.ErrorCase] = []
        if configuration.auth.jwt != nil {
            errors.append(OpenAPI.ErrorCase(status: 401, code: "unauthorized", when: accesses.contains(where: \.authRequired)
                ? "no bearer token, or one that does not verify (`WWW-Authenticate: Bearer realm=\"tributary\"`)"
                : "a bearer token that does not verify"))
        }
        if accesses.contains(where: { !$0.scopes.isEmpty }) {
            errors.append(OpenAPI.ErrorCase(status: 403, code: "forbidden", when: "the token lacks a scope the resource needs (`insufficient_scope`)"))
        }
        if accesses.contains(where: { $0.rateLimit != nil }) {
            errors.append(OpenAPI.ErrorCase(status: 429, code: "rate_limited", when: "the client is over its rate limit"))
        }
        if streams {
            errors.append(OpenAPI.ErrorCase(status: 429, code: "too_many_streams", when: "the client holds `server.maxStreamsPerClient` streams"))
        }
        return errors
    }

    /// Stream control's: a token that does not verify, or not the stream's owner's.
    var controlAccessErrors: [OpenAPI.ErrorCase] {
        var errors: [OpenAPI.ErrorCase] = []
        if configuration.auth.jwt != nil {
            errors += [
                OpenAPI.ErrorCase(status: 401, code: "unauthorized",
                                  when: "the stream was opened with a token and none is given, or the token does not verify"),
                OpenAPI.ErrorCase(status: 403, code: "forbidden", when: "the stream was opened with another subject's token"),
            ]
        }
        if configuration.server.rateLimit != nil {
            errors.append(OpenAPI.ErrorCase(status: 429, code: "rate_limited", when: "the client is over its rate limit"))
        }
        return errors
    }
}
