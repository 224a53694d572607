import HTTPCore
import HTTPServer

/// A route of the service: its pattern (the label of its logs and metrics) and its handler.
struct Route {
    let pattern: String
    let handle: (ServerRequest) -> Void
}

extension Router where Handler == Route {
    /// Adds a route whose label is its pattern.
    mutating func add(_ method: HTTPMethod, _ pattern: String, _ handle: @escaping (ServerRequest) -> Void) {
        add(method, pattern, Route(pattern: pattern, handle: handle))
    }
}
