/// Header fields checked for the wire once, for every call that carries them: an upstream's
/// own headers once, a request's forwarded headers once per request, where
/// ``UpstreamRequest/headers`` are checked on every call. A field that may not go on the wire
/// as one line (``RequestHead``'s rule: a token for a name, not a framing header, no CR, LF
/// or NUL in the value) is left out here; the rest are kept as the bytes a head carries, so a
/// call copies them at once. Checking a forwarded `Authorization` on each of an N=10
/// request's 11 calls cost about 3,300 instructions a request.
///
/// ```swift
/// let base: CheckedHeaders = [("Accept", "application/json")]
/// let perRequest = base.appending(caller.forwardedHeaders)   // checked here, once
/// UpstreamRequest(base: tasks, path: "/groups", checkedHeaders: perRequest)
/// ```
public struct CheckedHeaders: Sendable, ExpressibleByArrayLiteral {
    /// One reference, so a request carrying them costs one retain, not one per array.
    private final class Storage: Sendable {
        let fields: [(String, String)]
        /// `Name: value\r\n` for each field.
        let wire: [UInt8]
        /// Whether a field is a trace's (`traceparent`, `tracestate`), which a call with a
        /// trace writes from the trace instead.
        let namesTrace: Bool

        init(fields: [(String, String)], wire: [UInt8], namesTrace: Bool) {
            self.fields = fields
            self.wire = wire
            self.namesTrace = namesTrace
        }
    }

    private let storage: Storage

    public static let none = CheckedHeaders([])

    /// `fields` that may go on the wire, in order.
    public init(_ fields: [(String, String)]) {
        self = CheckedHeaders(storage: Storage(fields: [], wire: [], namesTrace: false)).appending(fields)
    }

    public init(arrayLiteral fields: (String, String)...) {
        self.init(fields)
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The fields kept, in order.
    public var fields: [(String, String)] { storage.fields }
    var wire: [UInt8] { storage.wire }
    var namesTrace: Bool { storage.namesTrace }

    /// These fields, then those of `more` that may go on the wire (only those are checked).
    public func appending(_ more: some Sequence<(String, String)>) -> CheckedHeaders {
        var fields = storage.fields
        var wire = storage.wire
        var namesTrace = storage.namesTrace
        for (name, value) in more where RequestHead.isSendable(name: name, value: value) {
            fields.append((name, value))
            wire += name.utf8
            wire += ": ".utf8
            wire += value.utf8
            wire += "\r\n".utf8
            namesTrace = namesTrace || RequestHead.isTrace(name)
        }
        return CheckedHeaders(storage: Storage(fields: fields, wire: wire, namesTrace: namesTrace))
    }
}
