public import Synchronization

/// A W3C Trace Context (https://www.w3.org/TR/trace-context/): the trace a request belongs to,
/// so every upstream call it causes can be tied back to it. Taken from the request's
/// `traceparent` when that is valid, otherwise new; each upstream call then goes out as a
/// span of its own of that trace, with the request's `tracestate` unchanged. The service's
/// own span for the request has an id of its own too (``spanID``), new with each context,
/// which names the request in log lines.
///
/// ```swift
/// let trace = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "congo=t61")
/// trace.traceID            // "4bf92f3577b34da6a3ce929d0e0e4736"
/// trace.spanID             // "<16 hex digits, new>": the service's span, not the caller's 00f067aa0ba902b7
/// trace.upstreamHeaders()  // [("traceparent", "00-4bf92f…4736-<a new span id>-01"), ("tracestate", "congo=t61")]
/// UpstreamRequest(base: base, path: "/groups", trace: trace)   // the client writes the same
/// ```
///
/// A value, `Sendable`: it travels with the pipeline a request starts, detail calls that start
/// long after the handler returned included.
public struct TraceContext: Sendable, Equatable {
    // The ids are kept as numbers, not as the strings of their digits: the context is copied
    // into every upstream call of a request, and a 32-digit string cost a reference count on
    // each copy and an allocation for each new trace. Usable from inlinable code: the upstream
    // client writes every call's `traceparent` from them in place (``writeParent(span:into:)``).
    /// The trace id's first and last 16 hex digits, as numbers.
    @usableFromInline let traceHigh: UInt64
    @usableFromInline let traceLow: UInt64
    /// The id of the service's own span for the request (or refresh) this context was made
    /// for: one ``nextID()`` when the context is made, or the span a tracer made
    /// (``init(ownSpanOf:tracestate:)``).
    package let span: UInt64
    /// The flags byte (bit 0: sampled), passed on as received.
    @usableFromInline let flagBits: UInt8
    /// The request's `tracestate`, forwarded unchanged (only with a valid `traceparent`, and
    /// at most ``maximumStateBytes``: the length every participant must pass on).
    public let state: String?

    /// 32 lowercase hex digits, not all zero.
    public var traceID: String { LowercaseHex.string(traceHigh, traceLow) }

    /// 16 lowercase hex digits, not all zero: the service's own span for the request, new with
    /// each context (never the caller's parent id), so that its log lines can name it.
    public var spanID: String { LowercaseHex.string(span) }

    /// 2 lowercase hex digits (bit 0: sampled), passed on as received.
    public var flags: String {
        String(unsafeUninitializedCapacity: 2) { buffer in
            LowercaseHex.write(flagBits, into: buffer, at: 0)
            return 2
        }
    }

    /// The longest `tracestate` forwarded: W3C asks every participant to pass on at least 512
    /// bytes; a longer one is dropped rather than copied onto every upstream call.
    public static let maximumStateBytes = 512

    /// The context of a request: its `traceparent` if valid (version 00, a trace id and a
    /// parent id of lowercase hex, neither all zero, two hex digits of flags), with its
    /// `tracestate`; otherwise a new trace, sampled, without state. Either way a new ``spanID``.
    public init(traceparent: String?, tracestate: String?) {
        guard let traceparent, let parsed = Self.parse(traceparent) else {
            self.init()
            return
        }
        self.init(traceHigh: parsed.traceHigh, traceLow: parsed.traceLow, flagBits: parsed.flagBits,
                  state: tracestate.flatMap { $0.utf8.count <= Self.maximumStateBytes && !$0.isEmpty ? $0 : nil })
    }

    private init(traceHigh: UInt64, traceLow: UInt64, flagBits: UInt8, state: String?, span: UInt64 = nextID()) {
        self.traceHigh = traceHigh
        self.traceLow = traceLow
        self.span = span
        self.flagBits = flagBits
        self.state = state
    }

    /// The context of a span a tracer made, from the `traceparent` that names it (its parent
    /// id is the span's own): the service's calls under it are its children. Nil when the
    /// value is not a valid version-00 `traceparent`.
    package init?(ownSpanOf traceparent: String, tracestate: String?) {
        guard let parsed = Self.parse(traceparent) else { return nil }
        self.init(
            traceHigh: parsed.traceHigh, traceLow: parsed.traceLow, flagBits: parsed.flagBits,
            state: tracestate.flatMap { $0.utf8.count <= Self.maximumStateBytes && !$0.isEmpty ? $0 : nil },
            span: parsed.parent)
    }

    /// The `traceparent` that names this context's own span as the parent: what a tracer
    /// reads to make a span its child.
    package var ownParent: String {
        String(unsafeUninitializedCapacity: Self.parentLength) { buffer in
            writeParent(span: span, into: buffer)
            return Self.parentLength
        }
    }

    /// A new trace: a trace id of two values of ``nextID()`` (its span id a third), flags
    /// `01`, no state (every request without a valid `traceparent` starts one, and so does
    /// each refresh of a live pipeline, which no one request causes). Two `getrandom` system
    /// calls per request before; a trace id, like a span id, has to be unique, not secret
    /// (flags `01` make no claim of randomness, which W3C's level 2 `random` flag would).
    public init() {
        self.init(traceHigh: Self.nextID(), traceLow: Self.nextID(), flagBits: 0x01, state: nil)
    }

    /// The headers of one upstream call: `traceparent` with a new span id, and `tracestate`
    /// when the request had one. (The upstream client writes them itself for a request with a
    /// ``UpstreamRequest/trace``, without making these strings.)
    public func upstreamHeaders() -> [(String, String)] {
        upstreamHeaders(span: Self.nextID())
    }

    /// The headers of one upstream call that is span `span` of this trace (HTTPS calls, which
    /// evhttp's client writes from strings).
    package func upstreamHeaders(span: UInt64) -> [(String, String)] {
        let parent = String(unsafeUninitializedCapacity: Self.parentLength) { buffer in
            writeParent(span: span, into: buffer)
            return Self.parentLength
        }
        guard let state else { return [("traceparent", parent)] }
        return [("traceparent", parent), ("tracestate", state)]
    }

    /// The length of a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>`.
    @inlinable package static var parentLength: Int { 55 }

    /// Writes the `traceparent` value of a call that is span `span` of this trace into the
    /// first ``parentLength`` bytes of `buffer`.
    @inlinable @inline(__always)
    package func writeParent(span: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count >= Self.parentLength, "no room for a traceparent")
        buffer[0] = UInt8(ascii: "0")
        buffer[1] = UInt8(ascii: "0")
        buffer[2] = UInt8(ascii: "-")
        LowercaseHex.write(traceHigh, into: buffer, at: 3)
        LowercaseHex.write(traceLow, into: buffer, at: 19)
        buffer[35] = UInt8(ascii: "-")
        LowercaseHex.write(span, into: buffer, at: 36)
        buffer[52] = UInt8(ascii: "-")
        LowercaseHex.write(flagBits, into: buffer, at: 53)
    }

    /// Where span and trace ids come from: a Weyl sequence from a random start (one system
    /// random number per process), shared by every thread.
    @usableFromInline static let idSequence: Atomic<UInt64> = {
        var random = SystemRandomNumberGenerator()
        return Atomic(random.next())
    }()

    /// A new id, never zero: the next value of ``idSequence`` mixed by SplitMix64, a
    /// bijection, so ids repeat only after 2⁶⁴ of them and look random; two processes
    /// overlap only if their random starts fall within as many ids of each other. An id has to
    /// be unique, not secret, and a system random number per id (a `getrandom` system call,
    /// ~0.5 µs) would cost more than the rest of the header (`FoundationBench trace`).
    @inlinable
    package static func nextID() -> UInt64 {
        let mixed = SplitMix64.mix(idSequence.wrappingAdd(SplitMix64.gamma, ordering: .relaxed).newValue)
        return mixed == 0 ? 1 : mixed  // all zeros is invalid
    }

    /// The trace id, parent id and flags of a valid version-00 `traceparent`, or nil.
    static func parse(_ header: String) -> (traceHigh: UInt64, traceLow: UInt64, parent: UInt64, flagBits: UInt8)? {
        let bytes = Array(header.utf8)
        // 00-<32 hex>-<16 hex>-<2 hex>
        guard bytes.count == 55, bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "0"),
              bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"), bytes[52] == UInt8(ascii: "-") else { return nil }
        let traceID = bytes[3..<35]
        let parentID = bytes[36..<52]
        let flags = bytes[53..<55]
        guard [traceID, parentID, flags].allSatisfy({ $0.allSatisfy(LowercaseHex.isDigit) }),
              traceID.contains(where: { $0 != UInt8(ascii: "0") }),
              parentID.contains(where: { $0 != UInt8(ascii: "0") }) else { return nil }
        return (LowercaseHex.value(of: bytes[3..<19]), LowercaseHex.value(of: bytes[19..<35]), LowercaseHex.value(of: parentID),
                UInt8(LowercaseHex.value(of: flags)))
    }
}
