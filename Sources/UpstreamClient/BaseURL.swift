import CLibevent

/// An upstream's base URL: where its API lives, e.g. `https://api.example.com:8443/v2`.
///
/// Requests name a path relative to it; the base path is prefixed (`/v2` + `/groups`).
///
/// ```swift
/// let tasks = try BaseURL("http://127.0.0.1:8081")
/// client.execute(UpstreamRequest(base: tasks, path: "/groups")) { ... }
/// ```
public struct BaseURL: Hashable, Sendable, CustomStringConvertible {
    /// Scheme, host and port: one connection pool per origin.
    public struct Origin: Hashable, Sendable, CustomStringConvertible {
        public let isTLS: Bool
        public let host: String
        public let port: UInt16
        /// The `Host` header value (the port only when it is not the scheme's default), made
        /// once: every call sends it.
        let hostHeader: String

        public init(isTLS: Bool, host: String, port: UInt16) {
            self.isTLS = isTLS
            self.host = host
            self.port = port
            let shownHost = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
            hostHeader = port == (isTLS ? 443 : 80) ? shownHost : "\(shownHost):\(port)"
        }

        public var description: String {
            let shownHost = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
            return "\(isTLS ? "https" : "http")://\(shownHost):\(port)"
        }
    }

    public var origin: Origin { parts.origin }
    /// The base path without a trailing slash (empty for the root).
    public var path: String { parts.path }

    /// The origin and the path in one object. Every upstream call copies its base URL into its
    /// request and destroys it with the call: as three strings (host, `Host` header, path),
    /// that was three retains and three releases a call; as one object, it is one of each.
    private let parts: Parts

    private final class Parts: Sendable {
        let origin: Origin
        let path: String

        init(origin: Origin, path: String) {
            self.origin = origin
            self.path = path
        }
    }

    public static func == (left: BaseURL, right: BaseURL) -> Bool {
        left.parts === right.parts || (left.origin == right.origin && left.path == right.path)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(origin)
        hasher.combine(path)
    }

    /// Parses an absolute `http` or `https` URL; throws a message naming what is wrong.
    public init(_ text: String) throws(BaseURLError) {
        guard let parsed = evhttp_uri_parse(text) else { throw BaseURLError(url: text, problem: "is not a valid URL") }
        defer { evhttp_uri_free(parsed) }
        let scheme = evhttp_uri_get_scheme(parsed).map { String(cString: $0).lowercased() }
        guard scheme == "http" || scheme == "https" else {
            throw BaseURLError(url: text, problem: "must start with http:// or https://")
        }
        guard let hostPointer = evhttp_uri_get_host(parsed), hostPointer.pointee != 0 else {
            throw BaseURLError(url: text, problem: "has no host")
        }
        guard evhttp_uri_get_query(parsed) == nil, evhttp_uri_get_fragment(parsed) == nil else {
            throw BaseURLError(url: text, problem: "must not have a query or fragment")
        }
        let isTLS = scheme == "https"
        let port = evhttp_uri_get_port(parsed)
        guard port <= 65535 else { throw BaseURLError(url: text, problem: "has an invalid port") }
        // libevent keeps an IPv6 literal's brackets ("[::1]"); the origin holds the address
        // itself, which is what connecting, TLS and the Host header each need.
        var host = String(cString: hostPointer)
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let origin = Origin(isTLS: isTLS, host: host, port: port < 0 ? (isTLS ? 443 : 80) : UInt16(port))
        var path = evhttp_uri_get_path(parsed).map { String(cString: $0) } ?? ""
        while path.hasSuffix("/") { path.removeLast() }
        parts = Parts(origin: origin, path: path)
    }

    public var description: String { origin.description + path }
}

/// A base URL that could not be used, with the reason.
public struct BaseURLError: Error, CustomStringConvertible, Sendable {
    public let url: String
    public let problem: String
    public var description: String { "\"\(url)\" \(problem)" }
}
