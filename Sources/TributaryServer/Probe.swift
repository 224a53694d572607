import EventLoop
import UpstreamClient

/// `tributary probe URL`: one GET through the service's own HTTP client, for a container's
/// HEALTHCHECK (the runtime image has no curl). Succeeds on a 2xx answer.
public enum Probe {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// GETs `url` (absolute, `http://` or `https://`) and returns the status if it is 2xx.
    public static func get(_ url: String, timeout: Duration = .seconds(3)) throws -> Int {
        guard let pathStart = url.firstRange(of: "://").flatMap({ url[$0.upperBound...].firstIndex(of: "/") }) else {
            throw Failure(description: "\(url): expected an absolute URL with a path, e.g. http://127.0.0.1:8080/healthz")
        }
        let base = try BaseURL(String(url[..<pathStart]))
        let loop = try EventLoop()
        let client = UpstreamClient(loop: loop)
        var outcome: Result<UpstreamResponse, UpstreamError>?
        client.execute(UpstreamRequest(base: base, path: String(url[pathStart...]), timeout: timeout)) { result in
            outcome = result
            loop.stop()
        }
        try withExtendedLifetime(client) { try loop.run() }
        switch outcome {
        case .success(let response) where (200..<300).contains(response.status): return response.status
        case .success(let response): throw Failure(description: "\(url) answered \(response.status)")
        case .failure(let error): throw Failure(description: error.description)
        case nil: throw Failure(description: "\(url): no answer")
        }
    }
}
