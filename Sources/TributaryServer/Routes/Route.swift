import AccessControl
import Aggregation
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

    /// `POST /<name>/reload[?team=core]`: for a client `admin` lets in, reads the parameter
    /// values the reload aims at (`aim`: 400 when refused, and nothing is reloaded), runs
    /// `reload` with them (the live pipelines or streams of resource `name` whose values hold
    /// them, here or through the fleet) and answers 202 `{"reloaded":N}`, N being what
    /// `reload` counted.
    mutating func addReload(
        of name: String, admin: AdminToken, aim: @escaping (ServerRequest) -> Result<ParameterValues, HTTPError>,
        _ reload: @escaping @Sendable (ParameterValues) -> Int
    ) {
        add(.post, "/\(name)/reload") { request in
            guard admin.authorize(request) else { return }
            switch aim(request) {
            case .success(let values):
                request.respond(status: 202, json: #"{"reloaded":\#(reload(values))}"#, headers: [("Cache-Control", "no-store")])
            case .failure(let error):
                request.respond(error)
            }
        }
    }
}
