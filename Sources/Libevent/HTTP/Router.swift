/// Routes a method and path to a handler, with `{name}` path parameters.
///
/// Patterns are matched segment by segment; a parameter matches one whole segment, given to
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

    fileprivate enum Segment: Equatable, Sendable {
        case literal(String)
        case parameter(String)
    }

    fileprivate struct Route {
        let method: HTTPMethod
        let segments: [Segment]
        let handler: Handler
    }

    private var routes: [Route] = []

    public init() {}

    /// Adds a route; earlier routes win when several match.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, _ handler: Handler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        routes.append(Route(method: method, segments: segments, handler: handler))
    }

    /// The route for `method` and the percent-encoded `path`.
    public func match(_ method: HTTPMethod, path: String) -> Match {
        let parts = Self.split(path).map { QueryString.percentDecoded(String($0)) }
        guard !parts.contains(where: { $0 == nil }) else { return .notFound }
        let decoded = parts.map { $0! }
        var allowed: [HTTPMethod] = []
        for route in routes {
            guard let parameters = Self.parameters(of: route.segments, in: decoded) else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                return .found(route.handler, parameters: parameters)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    private static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }

    private static func parameters(of segments: [Segment], in parts: [String]) -> [String: String]? {
        guard segments.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal): guard literal == part else { return nil }
            case .parameter(let name): parameters[name] = part
            }
        }
        return parameters
    }
}

extension Router: Sendable where Handler: Sendable {}
extension Router.Route: Sendable where Handler: Sendable {}
