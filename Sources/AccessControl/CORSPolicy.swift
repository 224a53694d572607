package import HTTPServer

/// Cross-origin access for browsers on other origins (`server.corsOrigins`): answers
/// preflight requests and adds `Access-Control-Allow-Origin` to answers for allowed origins.
/// `*` allows every origin. With no origins configured, no CORS header is ever sent.
package struct CORSPolicy {
    let allowedOrigins: Set<String>

    package init(allowedOrigins: Set<String>) {
        self.allowedOrigins = allowedOrigins
    }

    static let allowedMethods = "GET, POST, PUT, OPTIONS"
    static let allowedHeaders = "Content-Type, Authorization, Last-Event-ID"

    /// The headers every answer to `request` carries.
    package func headers(for request: ServerRequest) -> [(String, String)] {
        guard let origin = request.header("Origin"), !allowedOrigins.isEmpty else { return [] }
        if allowedOrigins.contains("*") { return [("Access-Control-Allow-Origin", "*")] }
        guard allowedOrigins.contains(origin) else { return [] }
        return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin")]
    }

    /// Whether `request` is a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`).
    package func isPreflight(_ request: ServerRequest) -> Bool {
        request.method == .options && request.header("Access-Control-Request-Method") != nil
    }

    /// Answers a preflight: 204, with the allowed methods and headers for allowed origins.
    package func answerPreflight(_ request: ServerRequest) {
        var headers: [(String, String)] = []
        if !self.headers(for: request).isEmpty {
            headers = [
                ("Access-Control-Allow-Methods", Self.allowedMethods),
                ("Access-Control-Allow-Headers", Self.allowedHeaders),
                ("Access-Control-Max-Age", "600"),
            ]
        }
        request.respond(status: 204, headers: headers, body: [UInt8]())
    }
}
