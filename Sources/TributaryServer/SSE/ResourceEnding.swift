import HTTPServer

/// Why the live streams of a resource end while the service runs on: a configuration reload
/// removed the resource, or changed its definition (docs/operations.md, "Reloading the
/// configuration"); or, for one stream, the bearer token it was opened with expired.
enum ResourceEnding: Equatable {
    case removed
    case changed
    case tokenExpired

    /// The `event: error` its streams end with.
    func error(of resource: String) -> HTTPError {
        switch self {
        case .removed:
            HTTPError(status: 404, code: "resource_removed", message: "the configuration no longer has the resource \(resource)")
        case .changed:
            HTTPError(status: 503, code: "resource_changed",
                      message: "the configuration changed the resource \(resource): reconnect for its new definition")
        case .tokenExpired:
            HTTPError(status: 401, code: "token_expired", message: "the bearer token this stream was opened with expired: reconnect with a new one")
        }
    }
}
