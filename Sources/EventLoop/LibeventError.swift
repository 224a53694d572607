import CLibevent
import Glibc

/// A libevent call that failed, named after the call.
///
/// libevent reports failure as `-1` or `NULL` and rarely says more; `errno` is captured where
/// the call is a thin wrapper over a system call (binding, listening). Every C return code in
/// this module passes through ``check(_:_:)`` or ``unwrap(_:_:)`` so failures read the same.
public struct LibeventError: Error, CustomStringConvertible, Sendable {
    /// The libevent function that failed, e.g. `"evhttp_bind_listener"`.
    public let call: String
    /// `errno` right after the failure (0 when the call does not set it).
    public let errno: Int32
    /// Extra context, e.g. the address that could not be bound.
    public let detail: String

    public init(call: String, errno: Int32 = 0, detail: String = "") {
        self.call = call
        self.errno = errno
        self.detail = detail
    }

    public var description: String {
        var text = "\(call) failed"
        if !detail.isEmpty { text += " (\(detail))" }
        if errno != 0, let message = strerror(errno) { text += ": \(String(cString: message))" }
        return text
    }

    /// Throws unless `result` is 0 or positive (libevent's success codes).
    @discardableResult
    static func check(_ result: Int32, _ call: String, detail: String = "") throws(LibeventError) -> Int32 {
        guard result >= 0 else { throw LibeventError(call: call, errno: Glibc.errno, detail: detail) }
        return result
    }

    /// Returns the pointer, or throws when libevent returned `NULL`.
    package static func unwrap<Pointer>(_ pointer: Pointer?, _ call: String, detail: String = "") throws(LibeventError) -> Pointer {
        guard let pointer else { throw LibeventError(call: call, errno: Glibc.errno, detail: detail) }
        return pointer
    }
}
