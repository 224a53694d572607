import HTTPCore
/// A client's byte stream as libevent's evhttp will frame it into requests, followed byte by
/// byte before evhttp reads the bytes, to police what libevent 2.1 leaves unbounded or lenient.
///
/// evhttp buffers a chunked body's size line until its line end, however far away (memory
/// without bound, and a rescan of the whole buffer on every read), and it reads sizes with
/// `strtoll`, so `0x5`, ` 5`, `+5` or `5 ` count as 5 where a stricter proxy in front may
/// see something else: a request smuggling risk. This follower mirrors evhttp's own framing
/// decisions (request line, headers, `Content-Length`, `Transfer-Encoding`, chunks, trailers)
/// and holds chunked bodies to RFC 9112 §7.1: a size line is 1 to 16 hex digits and CRLF
/// (no extensions, which evhttp cannot parse anyway), and each chunk's data ends in CRLF.
///
/// It also notes, per request, what evhttp accepts silently but merges away before a handler
/// could see it: an obsolete line folding (obs-fold) of a header.
///
/// ```swift
/// var framing = RequestFraming()
/// if let violation = framing.feed(bytes) {
///     // keep the bytes before violation.position, answer request violation.request with 400
/// }
/// ```
///
/// Requests evhttp refuses by itself (both `Content-Length` and `Transfer-Encoding`, a
/// malformed `Content-Length`, a malformed request line) end the connection, so
/// framing stops following there (``isFollowing`` becomes false).
struct RequestFraming {
    /// Where the client's bytes break the framing rules; nothing from ``position`` on may reach
    /// evhttp.
    struct Violation: Equatable {
        /// The request it belongs to (0 for the connection's first).
        let request: Int
        /// The offset in the client's byte stream where the offending line or bytes begin.
        let position: Int
        let message: String
    }

    /// The longest chunk-size line: 16 hex digits (a 64-bit size).
    static let maxChunkSizeDigits = 16

    private enum State {
        case requestLine
        case headerLine
        /// A `Content-Length` body with this many bytes still to come.
        case body(remaining: Int)
        case chunkSize(digits: Int, value: UInt64, sawCR: Bool)
        case chunkData(remaining: UInt64)
        case chunkDataEnd(sawCR: Bool)
        case trailerLine
        /// evhttp refuses what it has read and closes the connection: nothing more to police.
        case closing
        /// A violation was found: nothing after it reaches evhttp.
        case violated
    }

    private var state = State.requestLine
    /// Bytes fed so far: the stream offset of the next byte.
    private(set) var position = 0
    /// Request heads completed so far: the index of the request being read.
    private(set) var request = 0
    /// Requests with an obs-fold header line, which evhttp merges into the previous header.
    private(set) var foldedRequests: Set<Int> = []

    /// The current line, while it matters: the request line's method, or a framing header.
    private var line: [UInt8] = []
    private var lineStart = 0
    private var lineIsEmpty = true
    /// Whether the current header line is being kept (its name is a framing header's).
    private var keepingLine = true
    private var method: [UInt8] = []
    /// The framing headers of the current head, values as evhttp stores them.
    private var contentLengths: [[UInt8]] = []
    private var transferEncodings: [[UInt8]] = []
    /// Which framing header the last header line was, for obs-fold continuations.
    private var lastHeader: FramingHeader?

    private enum FramingHeader {
        case contentLength, transferEncoding, other
    }

    /// Whether the stream is still followed (false once evhttp will close the connection, or
    /// after a violation).
    var isFollowing: Bool {
        switch state {
        case .closing, .violated: false
        default: true
        }
    }

    /// Follows `bytes`, the next bytes of the client's stream; returns the first violation.
    mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Violation? {
        var index = 0
        while index < bytes.count {
            switch state {
            case .closing, .violated:
                position += bytes.count - index
                return nil
            case .body(let remaining):
                let taken = min(remaining, bytes.count - index)
                index += taken
                position += taken
                state = remaining == taken ? .requestLine : .body(remaining: remaining - taken)
                if remaining == taken { startLine() }
                continue
            case .chunkData(let remaining):
                let taken = Int(min(remaining, UInt64(bytes.count - index)))
                index += taken
                position += taken
                state = remaining == UInt64(taken) ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - UInt64(taken))
                if remaining == UInt64(taken) { lineStart = position }
                continue
            default:
                break
            }
            if isSkippingLine {
                let lineEnd = HTTPSyntax.firstIndex(of: 0x0A, in: bytes, from: index) ?? bytes.count
                if lineEnd > index {
                    position += lineEnd - index
                    index = lineEnd
                    continue
                }
            }
            let byte = bytes[index]
            index += 1
            position += 1
            if let violation = step(byte) {
                state = .violated
                return violation
            }
        }
        return nil
    }

    /// Whether the rest of the current line no longer matters byte by byte: the request
    /// line after its method, a header line after a name that is not a framing header's.
    /// Its bytes up to the line end are passed over at once (`memchr`), not stepped through:
    /// most of a request's bytes are such values, and every request passes here.
    private var isSkippingLine: Bool {
        guard !lineIsEmpty, !keepingLine else { return false }
        switch state {
        case .requestLine: return true
        case .headerLine: return lastHeader != nil
        default: return false
        }
    }

    // MARK: - One byte of a line

    private mutating func step(_ byte: UInt8) -> Violation? {
        switch state {
        case .requestLine, .headerLine, .trailerLine:
            if byte == 0x0A {
                endLine()
            } else {
                lineByte(byte)
            }
            return nil
        case .chunkSize(let digits, let value, let sawCR):
            return chunkSizeByte(byte, digits: digits, value: value, sawCR: sawCR)
        case .chunkDataEnd(let sawCR):
            if !sawCR && byte == 0x0D {
                state = .chunkDataEnd(sawCR: true)
            } else if sawCR && byte == 0x0A {
                state = .chunkSize(digits: 0, value: 0, sawCR: false)
                lineStart = position
            } else {
                return violation("a chunk's data must end in CRLF", at: lineStart)
            }
            return nil
        case .body, .chunkData, .closing, .violated:
            return nil
        }
    }

    private mutating func chunkSizeByte(_ byte: UInt8, digits: Int, value: UInt64, sawCR: Bool) -> Violation? {
        if sawCR {
            guard byte == 0x0A else { return violation("a chunk-size line must end in CRLF", at: lineStart) }
            if value == 0 {
                state = .trailerLine
                startLine()
            } else {
                state = .chunkData(remaining: value)
            }
            return nil
        }
        if byte == 0x0D {
            guard digits > 0 else { return violation("a chunk-size line must hold a size", at: lineStart) }
            state = .chunkSize(digits: digits, value: value, sawCR: true)
            return nil
        }
        if byte == 0x0A { return violation("a chunk-size line must end in CRLF", at: lineStart) }
        guard let digit = HTTPSyntax.hexValue(byte) else {
            let what = byte == UInt8(ascii: ";") ? "chunk extensions are not supported" : "a chunk size must be hex digits only"
            return violation(what, at: lineStart)
        }
        guard digits < Self.maxChunkSizeDigits else {
            return violation("a chunk size has at most \(Self.maxChunkSizeDigits) hex digits", at: lineStart)
        }
        state = .chunkSize(digits: digits + 1, value: value << 4 | UInt64(digit), sawCR: false)
        return nil
    }

    private mutating func lineByte(_ byte: UInt8) {
        if lineIsEmpty {
            lineIsEmpty = false
            if case .headerLine = state {
                if byte == 0x20 || byte == 0x09 {
                    // An obs-fold continuation: evhttp appends it to the previous header.
                    foldedRequests.insert(request)
                    keepingLine = lastHeader == .contentLength || lastHeader == .transferEncoding
                } else {
                    lastHeader = nil
                    keepingLine = true
                }
            }
        }
        if keepingLine { line.append(byte) }
        if case .headerLine = state, lastHeader == nil, byte == UInt8(ascii: ":") {
            // The name is complete: keep the line only for a framing header.
            lastHeader = line.dropLast().withUnsafeBytes { name in
                HTTPSyntax.equalsIgnoringCase(name, "content-length") ? .contentLength
                    : HTTPSyntax.equalsIgnoringCase(name, "transfer-encoding") ? .transferEncoding : .other
            }
            keepingLine = lastHeader != .other
        }
        if case .requestLine = state, keepingLine, byte == 0x20 {
            keepingLine = false  // the method is complete
        }
    }

    private mutating func endLine() {
        if line.last == 0x0D { line.removeLast() }
        let empty = lineIsEmpty || (line.isEmpty && keepingLine)
        switch state {
        case .requestLine:
            if empty {
                state = .closing  // evhttp refuses an empty request line
                return
            }
            method = line.last == 0x20 ? Array(line.dropLast()) : line
            contentLengths = []
            transferEncodings = []
            lastHeader = nil
            state = .headerLine
        case .headerLine:
            if empty {
                endHead()
                return
            }
            if line.first == 0x20 || line.first == 0x09 {
                appendContinuation()
            } else {
                switch lastHeader {
                case .contentLength?: contentLengths.append(Self.value(ofHeaderLine: line))
                case .transferEncoding?: transferEncodings.append(Self.value(ofHeaderLine: line))
                case .other?, nil: break
                }
            }
        case .trailerLine:
            if empty {
                state = .requestLine
            }
        default:
            break
        }
        startLine()
    }

    /// Frees the current line's buffer when no line is under way (it keeps its capacity from
    /// line to line otherwise): a connection whose request became a stream may read nothing
    /// for hours.
    mutating func releaseLineBuffer() {
        if lineIsEmpty { line = [] }
    }

    private mutating func startLine() {
        line.removeAll(keepingCapacity: true)
        lineStart = position
        lineIsEmpty = true
        keepingLine = true
    }

    /// evhttp appends a continuation, trimmed, to the last header's value after one space.
    private mutating func appendContinuation() {
        let trimmed = Self.trimmed(line)
        switch lastHeader {
        case .contentLength?: if !contentLengths.isEmpty { contentLengths[contentLengths.count - 1] += [0x20] + trimmed }
        case .transferEncoding?: if !transferEncodings.isEmpty { transferEncodings[transferEncodings.count - 1] += [0x20] + trimmed }
        case .other?, nil: break
        }
    }

    // MARK: - End of a head: evhttp's framing decision

    private mutating func endHead() {
        let index = request
        request += 1
        startLine()
        guard let framing = Self.framing(method: method, contentLengths: contentLengths, transferEncodings: transferEncodings) else {
            state = .closing
            return
        }
        _ = index
        method = []
        contentLengths = []
        transferEncodings = []
        switch framing {
        case .none: state = .requestLine
        case .length(let length): state = .body(remaining: length)
        case .chunked: state = .chunkSize(digits: 0, value: 0, sawCR: false)
        }
        lineStart = position
    }

    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    /// The body evhttp 2.1.12 (with Debian's smuggling fixes) reads after a head, or nil when
    /// it refuses the head and closes the connection.
    static func framing(method: [UInt8], contentLengths: [[UInt8]], transferEncodings: [[UInt8]]) -> Framing? {
        // Debian's fix refuses both together, and (by its own comment) a repeated
        // Content-Length, but checks the repetition only when Transfer-Encoding is there too:
        // alone, the first Content-Length wins (RequestHeadRules refuses the repetition).
        if !transferEncodings.isEmpty && !contentLengths.isEmpty { return nil }
        var chunked = false
        for value in transferEncodings {
            if chunked { return nil }
            let codings = value.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            if codings.dropLast().contains(where: { isChunked($0) }) { return nil }
            chunked = codings.last.map { isChunked($0) } ?? false
        }
        let knownMethods = ["GET", "POST", "PUT", "DELETE", "OPTIONS", "CONNECT", "PATCH"]
        guard knownMethods.contains(where: { method.elementsEqual($0.utf8) }) else { return Framing.none }
        if chunked { return .chunked }
        guard let value = contentLengths.first else { return Framing.none }
        guard let length = strtollLike(value) else { return nil }
        return length < 1 ? Framing.none : .length(length)
    }

    /// `strtoll(value, &end, 10)` with `*end == '\0'` required, as evhttp reads
    /// `Content-Length`: leading white space, a sign, then digits. nil when evhttp refuses it
    /// (no digits, trailing bytes, negative, or too large to be a body it would read).
    static func strtollLike(_ value: [UInt8]) -> Int? {
        var index = value.startIndex
        while index < value.endIndex, [0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D].contains(value[index]) { index += 1 }
        var negative = false
        if index < value.endIndex, value[index] == UInt8(ascii: "+") || value[index] == UInt8(ascii: "-") {
            negative = value[index] == UInt8(ascii: "-")
            index += 1
        }
        guard index < value.endIndex else { return nil }
        var result = 0
        while index < value.endIndex {
            let byte = value[index]
            guard (0x30...0x39).contains(byte) else { return nil }
            let (product, overflow) = result.multipliedReportingOverflow(by: 10)
            guard !overflow, product <= Int.max - Int(byte - 0x30) else { return nil }
            result = product + Int(byte - 0x30)
            index += 1
        }
        return negative ? (result == 0 ? 0 : nil) : result
    }

    // MARK: - Bytes

    private func violation(_ message: String, at position: Int) -> Violation {
        Violation(request: request - 1, position: position, message: message)
    }

    /// evhttp's value: after the first `:`, leading spaces skipped, trailing spaces and tabs trimmed.
    private static func value(ofHeaderLine line: [UInt8]) -> [UInt8] {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return [] }
        var value = line[(colon + 1)...].drop { $0 == 0x20 }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        return Array(value)
    }

    private static func trimmed(_ bytes: [UInt8]) -> [UInt8] {
        var slice = bytes[...].drop { $0 == 0x20 || $0 == 0x09 }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return Array(slice)
    }

    /// One transfer coding is `chunked`, ignoring surrounding white space and case.
    private static func isChunked(_ coding: ArraySlice<UInt8>) -> Bool {
        var slice = coding.drop { $0 == 0x20 || $0 == 0x09 }
        while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
        return slice.withUnsafeBytes { HTTPSyntax.equalsIgnoringCase($0, "chunked") }
    }
}
