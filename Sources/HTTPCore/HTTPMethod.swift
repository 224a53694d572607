/// An HTTP request method.
public enum HTTPMethod: String, Sendable, CaseIterable {
    case get = "GET", head = "HEAD", post = "POST", put = "PUT", delete = "DELETE"
    case options = "OPTIONS", trace = "TRACE", connect = "CONNECT", patch = "PATCH"
}

extension HTTPMethod {
    /// RFC 9110 §9.2.2: sending it twice has the effect of sending it once.
    package var isIdempotent: Bool {
        switch self {
        case .get, .head, .options, .trace, .put, .delete: true
        case .post, .connect, .patch: false
        }
    }
}
