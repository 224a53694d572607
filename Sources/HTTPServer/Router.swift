public import HTTPCore
/// Routes a method and path to a handler, with `{name}` path parameters.
///
/// Patterns are matched segment by segment, a literal by its bytes once the request's segment
/// is percent-decoded (as everything from outside is compared: `café` spelt with U+0301 is
/// another path); a parameter matches one whole segment, given to
/// the handler percent-decoded (so `/streams/a%2Fb` yields `id == "a/b"`). `HEAD` requests use
/// `GET` routes. A path that matches a pattern under another method is reported as
/// ``Match/methodNotAllowed(_:)`` so the caller can answer 405 with `Allow`.
///
/// ```swift
/// var router = Router<(ServerRequest) -> Void>()
/// router.add(.post, "/streams/{id}/triggers/{name}") { request in ... }
/// if case .found(let handle, let parameters) = router.match(.post, path: "/streams/42/triggers/reload") { ... }
/// ```
public struct Router<Handler> {
    public enum Match {
        case found(Handler, parameters: [String: String])
        case methodNotAllowed([HTTPMethod])
        case notFound
    }

    /// The routes' patterns and, at the same index, their handlers: matching reads only the
    /// patterns, which do not depend on `Handler`, so it runs as concrete code even where the
    /// router is used from another module (generic, it ran unspecialized on every request).
    private var patterns: [RoutePattern] = []
    private var handlers: [Handler] = []
    /// The patterns' indices by their number of segments, in order: a path is compared only
    /// with the patterns it could match.
    private var bySegmentCount: [[Int]] = []
    /// Routes without parameters that no earlier route can shadow, by their path as written
    /// (`/groups`): a request for exactly that path finds its route with one lookup, not by
    /// splitting, decoding and comparing against every pattern before it. Any other spelling
    /// of the path (`/groups/`, `/group%73`), or another method, is matched segment by
    /// segment as before.
    private var exactPaths: [String: (method: HTTPMethod, index: Int)] = [:]

    public init() {}

    /// Adds a route; earlier routes win when several match.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        let route = RoutePattern(method: method, pattern: pattern)
        if let exact = route.exactPath, !patterns.contains(where: { $0.matches(exact.parts) }) {
            exactPaths[exact.path] = (method, patterns.count)
        }
        while bySegmentCount.count <= route.segments.count { bySegmentCount.append([]) }
        bySegmentCount[route.segments.count].append(patterns.count)
        patterns.append(route)
        handlers.append(handler)
    }

    /// The route for `method` and the percent-encoded `path`.
    public func match(_ method: HTTPMethod, path: String) -> Match {
        if let route = exactPaths[path], route.method == method || (method == .head && route.method == .get) {
            return .found(handlers[route.index], parameters: [:])
        }
        return switch RoutePattern.match(method, path: path, in: patterns, bySegmentCount: bySegmentCount) {
        case .found(let index, let parameters): .found(handlers[index], parameters: parameters)
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed)
        case .notFound: .notFound
        }
    }
}

/// One route's method and pattern (`/streams/{id}/triggers/{name}`), split into segments.
private struct RoutePattern {
    enum Segment {
        /// Its bytes: a request's segment is compared with them as they are.
        case literal([UInt8])
        case parameter(String)
    }

    enum Match {
        case found(index: Int, parameters: [String: String])
        case methodNotAllowed([HTTPMethod])
        case notFound
    }

    let method: HTTPMethod
    let segments: [Segment]

    init(method: HTTPMethod, pattern: String) {
        self.method = method
        segments = Self.split(pattern).map { part in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(Array(part.utf8))
        }
    }

    /// For a pattern without parameters, its path in the one spelling the exact-path lookup
    /// takes (`/a/b`) and its segments; nil for one with parameters, or with bytes a request
    /// path would carry percent-encoded.
    var exactPath: (path: String, parts: [ArraySlice<UInt8>])? {
        var parts: [ArraySlice<UInt8>] = []
        for segment in segments {
            guard case .literal(let literal) = segment else { return nil }
            let text = String(decoding: literal, as: UTF8.self)
            guard text == QueryString.percentEncoded(text) else { return nil }
            parts.append(literal[...])
        }
        return ("/" + parts.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/"), parts)
    }

    /// The first of `patterns` that matches `method` and the percent-encoded `path`; its
    /// parameters are collected only once it is found.
    static func match(_ method: HTTPMethod, path: String, in patterns: [RoutePattern], bySegmentCount: [[Int]]) -> Match {
        guard let parts = decodedSegments(of: path), parts.count < bySegmentCount.count else { return .notFound }
        var allowed: [HTTPMethod] = []
        for index in bySegmentCount[parts.count] where patterns[index].matches(parts) {
            let pattern = patterns[index]
            if pattern.method == method || (method == .head && pattern.method == .get) {
                return .found(index: index, parameters: pattern.parameters(in: parts))
            }
            if !allowed.contains(pattern.method) { allowed.append(pattern.method) }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    /// `path`'s segments (empty ones left out), each percent-decoded, as slices of one copy of
    /// its bytes; nil when one holds a `%` that is not two hex digits, or decodes to bytes that
    /// are not UTF-8. Matching runs on every request whose path is not an exact route: split
    /// by `Character` and copied into a `String` each, `/teams/core/groups`' segments cost
    /// some 9,000 instructions (issue 41).
    private static func decodedSegments(of path: String) -> [ArraySlice<UInt8>]? {
        let bytes = Array(path.utf8)
        var parts: [ArraySlice<UInt8>] = []
        parts.reserveCapacity(8)
        var start = 0
        for end in 0...bytes.count where end == bytes.count || bytes[end] == UInt8(ascii: "/") {
            defer { start = end + 1 }
            guard start < end else { continue }
            let part = bytes[start..<end]
            guard part.contains(UInt8(ascii: "%")) else {
                parts.append(part)
                continue
            }
            guard let decoded = QueryString.percentDecoded(String(decoding: part, as: UTF8.self)) else { return nil }
            parts.append(Array(decoded.utf8)[...])
        }
        return parts
    }

    /// Whether `parts` are this pattern's segments: literals compared by their bytes.
    func matches(_ parts: [ArraySlice<UInt8>]) -> Bool {
        guard segments.count == parts.count else { return false }
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, !literal.elementsEqual(part) { return false }
        }
        return true
    }

    private func parameters(in parts: [ArraySlice<UInt8>]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            if case .parameter(let name) = segment { parameters[name] = String(decoding: part, as: UTF8.self) }
        }
        return parameters
    }
}

extension Router: Sendable where Handler: Sendable {}
