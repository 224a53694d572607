import HTTPCore
/// The bytes of an upstream request as ``SocketConnection`` sends them: the request line,
/// `Host`, the request's checked headers (copied as they were checked, ``CheckedHeaders``),
/// its other headers, its trace's `traceparent` and `tracestate`, `Content-Length` when there
/// is a body (or a method that expects one), the empty line, the body.
///
/// A header that cannot go on the wire as one line (a CR, LF or NUL in its value, or a name
/// that is not a token) is left out, never sent: its bytes would otherwise start a header (or
/// a request) of their own. So are a caller's `Host`, `Content-Length` and
/// `Transfer-Encoding`: the request's framing is the client's, written once; and, for a
/// request with a trace, its `traceparent` and `tracestate`: the trace's are written instead.
///
/// Every upstream call writes one, so the head is assembled in a scratch buffer on the stack,
/// copied into through a pointer, then appended to `bytes` at once: appending it piece by
/// piece, each append checking the array's uniqueness and capacity, cost more than the bytes.
/// The buffer is a kilobyte, which most heads fit; a longer head is measured (a string's
/// UTF-8 count costs nothing) and written again into a buffer of its size.
enum RequestHead {
    private static let usualCapacity = 1024

    /// `span`: the id the `traceparent` names (the call's CLIENT span); nil, a new one.
    static func write(_ request: UpstreamRequest, span: UInt64? = nil, hostHeader: String, into bytes: inout [UInt8]) {
        let written = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: usualCapacity) { scratch in
            writeHead(request, span: span, hostHeader: hostHeader, in: scratch, appendingTo: &bytes)
        }
        if !written {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity(request, hostHeader: hostHeader)) { scratch in
                let fits = writeHead(request, span: span, hostHeader: hostHeader, in: scratch, appendingTo: &bytes)
                precondition(fits, "RequestHead measured less room than it writes")
            }
        }
        if !request.body.isEmpty { bytes.append(contentsOf: request.body) }
    }

    /// Writes the head into `scratch` and appends it to `bytes`; false, appending nothing,
    /// when it does not fit.
    private static func writeHead(
        _ request: UpstreamRequest, span: UInt64?, hostHeader: String, in scratch: UnsafeMutableBufferPointer<UInt8>,
        appendingTo bytes: inout [UInt8]
    ) -> Bool {
        var writer = Writer(scratch)
        writer.append(utf8Of: request.method.rawValue)
        writer.append(UInt8(ascii: " "))
        writer.append(utf8Of: request.base.path)
        writer.append(utf8Of: request.path)
        writer.append(versionAndHost)
        writer.append(utf8Of: hostHeader)
        writer.appendLineEnd()
        if request.trace != nil && request.checkedHeaders.namesTrace {
            for (name, value) in request.checkedHeaders.fields where !isTrace(name) {
                withUTF8(of: name) { name in withUTF8(of: value) { value in writer.appendField(name, value) } }
            }
        } else {
            request.checkedHeaders.wire.withUnsafeBytes { writer.append($0) }
        }
        for (name, value) in request.headers {
            withUTF8(of: name) { name in
                withUTF8(of: value) { value in
                    guard isSendable(name: name, value: value), request.trace == nil || !isTrace(name) else { return }
                    writer.appendField(name, value)
                }
            }
        }
        if let trace = request.trace {
            writer.append(traceparentName)
            writer.write(count: TraceContext.parentLength) { trace.writeParent(span: span ?? TraceContext.nextID(), into: $0) }
            writer.appendLineEnd()
            if let state = trace.state {
                withUTF8(of: state) { state in
                    guard isSendable(value: state) else { return }
                    writer.append(tracestateName)
                    writer.append(state)
                    writer.appendLineEnd()
                }
            }
        }
        if hasContentLength(request) {
            writer.append(contentLengthName)
            writer.append(utf8Of: String(request.body.count))
            writer.appendLineEnd()
        }
        writer.appendLineEnd()
        guard !writer.overflowed else { return false }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<writer.count]))
        return true
    }

    /// Whether the request says how long its body is: when it has one, or its method expects one.
    private static func hasContentLength(_ request: UpstreamRequest) -> Bool {
        !request.body.isEmpty || request.method == .post || request.method == .put || request.method == .patch
    }

    /// Room for the head: an upper bound, as a header left out takes none in the end.
    private static func capacity(_ request: UpstreamRequest, hostHeader: String) -> Int {
        var capacity = request.method.rawValue.utf8.count + 1 + request.base.path.utf8.count + request.path.utf8.count
            + versionAndHost.utf8CodeUnitCount + hostHeader.utf8.count + 2 + 2
        capacity += request.checkedHeaders.wire.count
        for (name, value) in request.headers {
            capacity += name.utf8.count + 2 + value.utf8.count + 2
        }
        if let trace = request.trace {
            capacity += traceparentName.utf8CodeUnitCount + TraceContext.parentLength + 2
            if let state = trace.state { capacity += tracestateName.utf8CodeUnitCount + state.utf8.count + 2 }
        }
        if hasContentLength(request) { capacity += contentLengthName.utf8CodeUnitCount + String(request.body.count).utf8.count + 2 }
        return capacity
    }

    /// Copies bytes into the scratch buffer, in order; a piece that would not fit is not
    /// written, and marks the head as not written (``overflowed``).
    private struct Writer {
        let buffer: UnsafeMutableRawBufferPointer
        private(set) var count = 0
        private(set) var overflowed = false

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
            self.buffer = UnsafeMutableRawBufferPointer(buffer)
        }

        @inline(__always)
        mutating func append(_ bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty else { return }
            guard bytes.count <= buffer.count - count else {
                overflowed = true
                return
            }
            UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + bytes.count]).copyMemory(from: bytes)
            count += bytes.count
        }

        @inline(__always)
        mutating func append(_ byte: UInt8) {
            guard count < buffer.count else {
                overflowed = true
                return
            }
            buffer[count] = byte
            count += 1
        }

        /// Lets `write` fill the next `count` bytes.
        @inline(__always)
        mutating func write(count byteCount: Int, _ write: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
            guard byteCount <= buffer.count - count else {
                overflowed = true
                return
            }
            write(UnsafeMutableRawBufferPointer(rebasing: buffer[count..<count + byteCount]).assumingMemoryBound(to: UInt8.self))
            count += byteCount
        }

        @inline(__always)
        mutating func appendLineEnd() {
            append(UInt8(ascii: "\r"))
            append(UInt8(ascii: "\n"))
        }

        /// `name: value` and the line end (a field already checked).
        @inline(__always)
        mutating func appendField(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
            append(name)
            append(UInt8(ascii: ":"))
            append(UInt8(ascii: " "))
            append(value)
            appendLineEnd()
        }

        @inline(__always)
        mutating func append(utf8Of text: String) {
            RequestHead.withUTF8(of: text) { append($0) }
        }

        @inline(__always)
        mutating func append(_ text: StaticString) {
            append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
        }
    }

    /// A string's UTF-8 bytes in place when they are contiguous (a native or small string, as
    /// all are on Linux), else in a copy: without copying the string value itself.
    @inline(__always)
    private static func withUTF8(of text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        if text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) == nil {
            Array(text.utf8).withUnsafeBytes(body)
        }
    }

    /// Whether a caller's header may go on the wire: a token for a name, not one the client
    /// writes itself, and no CR, LF or NUL in the value.
    @inline(__always)
    private static func isSendable(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        !name.isEmpty && HTTPSyntax.endOfToken(in: name, from: 0) == name.count && !isFraming(name) && isSendable(value: value)
    }

    /// The same for a field as strings (``CheckedHeaders``).
    static func isSendable(name: String, value: String) -> Bool {
        var sendable = false
        withUTF8(of: name) { name in withUTF8(of: value) { value in sendable = isSendable(name: name, value: value) } }
        return sendable
    }

    /// Whether a header value may go on the wire: no CR, LF or NUL in it.
    @inline(__always)
    private static func isSendable(value: UnsafeRawBufferPointer) -> Bool {
        HTTPSyntax.firstControlByte(in: value, from: 0, where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) == value.count
    }

    private static let versionAndHost: StaticString = " HTTP/1.1\r\nHost: "
    private static let traceparentName: StaticString = "traceparent: "
    private static let tracestateName: StaticString = "tracestate: "
    private static let contentLengthName: StaticString = "Content-Length: "

    /// Whether a header name, a token, is one of a trace's, which a request with a trace has
    /// written from it.
    private static func isTrace(_ name: UnsafeRawBufferPointer) -> Bool {
        HTTPSyntax.tokenEqualsIgnoringCase(name, "traceparent") || HTTPSyntax.tokenEqualsIgnoringCase(name, "tracestate")
    }

    /// The same for a name as a string (HTTPS calls, whose head evhttp's client writes).
    static func isTrace(_ name: String) -> Bool {
        HTTPSyntax.equalsIgnoringCase(name, "traceparent") || HTTPSyntax.equalsIgnoringCase(name, "tracestate")
    }

    /// Whether a header name, a token, is one of those the client writes itself.
    private static func isFraming(_ name: UnsafeRawBufferPointer) -> Bool {
        HTTPSyntax.tokenEqualsIgnoringCase(name, "host") || HTTPSyntax.tokenEqualsIgnoringCase(name, "content-length")
            || HTTPSyntax.tokenEqualsIgnoringCase(name, "transfer-encoding")
    }
}
