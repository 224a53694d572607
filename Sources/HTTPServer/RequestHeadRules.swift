import CLibevent
import Glibc
import HTTPCore

/// What a request's head must respect beyond what evhttp checks, so that the service and any
/// proxy in front of it agree on where each request ends (RFC 9112 §6: a server that cannot
/// tell must answer 400 and close the connection).
///
/// evhttp accepts these and frames the body its own way, where a proxy may frame it another:
/// - `Content-Length` with a sign or other than digits (`+5`, which `strtoll` reads as 5);
/// - a `Transfer-Encoding` other than exactly `chunked` (evhttp ignores codings it does not
///   know and reads no body), repeated, or sent by an HTTP/1.0 client;
/// - a body on `HEAD` or `TRACE`, which evhttp leaves unread: it would be read as the next
///   request;
/// - a header name with white space (`Content-Length : 5` is a different header to evhttp);
/// - an obsolete line folding, which evhttp joins to the previous header (``RequestFraming``
///   notices it, as evhttp leaves no trace of it).
enum RequestHeadRules {
    /// Why the head of `raw` breaks the rules, or nil.
    static func violation(of raw: OpaquePointer, method: HTTPMethod, isHTTP10: Bool, folded: Bool) -> String? {
        if folded { return "obsolete line folding (a header line starting with white space) is not accepted" }
        var contentLength: UnsafeMutablePointer<CChar>?
        var contentLengths = 0
        var transferEncodings = 0
        var transferEncoding: UnsafeMutablePointer<CChar>?
        var entry = evhttp_request_get_input_headers(raw)?.pointee.tqh_first
        while let current = entry {
            let name = current.pointee.key!
            if name.pointee == 0 || strpbrk(name, " \t") != nil {
                return "a header name must not be empty or hold white space"
            }
            if strcasecmp(name, "Transfer-Encoding") == 0 {
                transferEncodings += 1
                transferEncoding = current.pointee.value
            } else if strcasecmp(name, "Content-Length") == 0 {
                contentLengths += 1
                contentLength = current.pointee.value
            }
            entry = current.pointee.next.tqe_next
        }
        if let transferEncoding {
            if isHTTP10 { return "an HTTP/1.0 request cannot use Transfer-Encoding" }
            guard transferEncodings == 1, strcasecmp(transferEncoding, "chunked") == 0 else {
                return "the only Transfer-Encoding accepted is chunked, once"
            }
        }
        if contentLengths > 1 { return "Content-Length must appear once" }
        if let contentLength, !String(cString: contentLength).utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return "Content-Length must be digits only"
        }
        if method == .head || method == .trace {
            let declaresBody = transferEncoding != nil || contentLength.map { strtoll($0, nil, 10) > 0 } == true
            if declaresBody { return "a \(method.rawValue) request cannot have a body" }
        }
        return nil
    }
}
