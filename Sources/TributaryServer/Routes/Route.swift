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

    /// `POST /<name>/reload`: runs `reload` (every pipeline or stream of resource `name`,
    /// here or through the fleet) for a client `admin` lets in, and answers 202
    /// `{"reloading":"<name>"}`.
    mutating func addReload(of name: String, admin: AdminToken, _ reload: @escaping @Sendable () -> Void) {
        add(.post, "/\(name)/reload") { request in
            guard admin.authorize(request) else { return }
            reload()
            request.respond(status: 202, json: JSONWriter.object([("reloading", name)]), headers: [("Cache-Control", "no-store")])
        }
    }
}
