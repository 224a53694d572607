import HTTPCore
import UpstreamClient

/// Reading `upstreams.<name>`: its URL and the fields ``Settings`` declares, then the headers
/// it sends (secrets, `${VAR}` expanded from the environment) and those it forwards.
extension Configuration {
    static func upstream(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> UpstreamSettings {
        try section.allowOnlyDeclared()
        var upstream = UpstreamSettings.defaults
        upstream.url = try baseURL(try section.requiredString("url"), at: section.location("url"))
        try section.section("circuitBreaker")?.allowOnlyDeclared()
        try UpstreamSettings.fields.read(section, into: &upstream)
        if let headers = try section.section("headers") {
            upstream.headers = try upstreamHeaders(headers, environment: environment)
        }
        if let forward = try section.strings("forward") {
            upstream.forward = try forwardedHeaders(forward, at: section.location("forward"))
        }
        return upstream
    }

    /// Header names neither configured nor forwarded: the client writes them itself, or they
    /// describe one connection, not the request (RFC 9110 §7.6.1), or they make the call
    /// conditional or partial, which revalidation does with validators of its own (a 304 to a
    /// client's `If-None-Match` would reuse an answer the service kept for another).
    static let reservedHeaderNames: Set<String> = [
        "host", "connection", "content-length", "transfer-encoding", "traceparent", "tracestate", "keep-alive", "te", "trailer",
        "upgrade", "proxy-connection", "if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range",
    ]

    /// `upstreams.<name>.headers`: names that are tokens and not reserved; values with
    /// `${VAR}` expanded from `environment`, no control bytes. A value never appears in an
    /// error (it is a secret); its key and its variable's name do.
    private static func upstreamHeaders(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> [UpstreamHeader] {
        var headers: [UpstreamHeader] = []
        for key in section.mapping.keys {
            let name = key.string ?? "\(key)"
            let location = section.location(name)
            try checkHeaderName(name, at: location)
            guard let template = try section.string(name) else { continue }
            let value = try expandVariables(in: template, from: environment, at: location)
            guard !value.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
                throw ConfigurationError(location, "the value holds a control character (a line break would end the header)")
            }
            headers.append(UpstreamHeader(name: name, value: value))
        }
        return headers
    }

    /// `upstreams.<name>.forward`: header names, tokens, not reserved, each once.
    private static func forwardedHeaders(_ names: [String], at location: String) throws(ConfigurationError) -> [String] {
        for name in names { try checkHeaderName(name, at: location) }
        guard Set(names.map { $0.lowercased() }).count == names.count else { throw ConfigurationError(location, "names a header twice") }
        return names
    }

    private static func checkHeaderName(_ name: String, at location: String) throws(ConfigurationError) {
        guard !name.isEmpty, name.utf8.allSatisfy(HTTPSyntax.isTokenByte) else {
            throw ConfigurationError(location, "\"\(name)\" is not a header name")
        }
        guard !reservedHeaderNames.contains(name.lowercased()) else {
            throw ConfigurationError(location, "\(name) cannot be set: Tributary writes it itself, or it belongs to one connection")
        }
    }

    /// `text` with each `${NAME}` replaced by that environment variable's value; an unset
    /// variable fails, naming it.
    static func expandVariables(in text: String, from environment: [String: String], at location: String) throws(ConfigurationError) -> String {
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw ConfigurationError(location, "a ${ without its }")
            }
            let variable = String(rest[start.upperBound..<end])
            guard !variable.isEmpty, variable.utf8.allSatisfy({ ($0 | 0x20) &- 0x61 < 26 || $0 &- 0x30 < 10 || $0 == UInt8(ascii: "_") }) else {
                throw ConfigurationError(location, "${\(variable)} is not an environment variable's name")
            }
            guard let value = environment[variable] else {
                throw ConfigurationError(location, "the environment variable \(variable) is not set")
            }
            result += value
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }
}
