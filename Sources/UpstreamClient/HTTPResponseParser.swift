import HTTPCore
/// Reads one HTTP/1.1 response (RFC 9112) as its bytes arrive, in pieces of any size, within
/// limits the caller sets: how large its head (and a chunked body's trailers) and its body may
/// grow. Whatever the bytes, it ends in a response or a failure, never a crash, and the same
/// bytes give the same result however they are split.
///
/// ```swift
/// var parser = HTTPResponseParser(limits: limits, keepsHeaders: false, expectsBody: true)
/// switch parser.feed(bytes) {          // as often as bytes arrive
/// case .needsMore: break
/// case .complete(let consumed): use(parser.response)   // bytes past `consumed` are no one's
/// case .failed(let kind, let detail): fail(kind, detail)
/// }
/// parser.endOfInput()                  // the connection closed
/// ```
///
/// It is the upstream client's, so it is lenient only where RFC 9112 asks a recipient to be
/// (a bare LF ends a line, interim 1xx answers are skipped) and strict wherever leniency would
/// let an upstream smuggle a second answer or make the client buffer without bound:
/// - a head with a folded line, a header name with whitespace or a malformed status line is
///   refused;
/// - `Content-Length` must be digits, and repeated only with the same value;
/// - `Transfer-Encoding` overrides `Content-Length`, and the connection is not reused after
///   such an answer, nor after a body delimited by the connection closing;
/// - a `Content-Length` or chunk size beyond the body limit fails at once, before its bytes
///   are read; a chunk-size line is bounded (``maxChunkSizeLine``).
package struct HTTPResponseParser {
    package struct Limits: Sendable {
        /// The status line and headers together (and again, a chunked body's trailers).
        package var maxHeadBytes: Int
        package var maxBodyBytes: Int

        package init(maxHeadBytes: Int, maxBodyBytes: Int) {
            self.maxHeadBytes = maxHeadBytes
            self.maxBodyBytes = maxBodyBytes
        }
    }

    /// Longest chunk-size line accepted (hex digits and any extensions).
    package static let maxChunkSizeLine = 1024

    package enum Outcome: Equatable, Sendable {
        case needsMore
        /// The response is whole: the first `consumed` bytes of the last input belonged to it;
        /// any after them belong to no request.
        case complete(consumed: Int)
        case failed(UpstreamError.Kind, String)
    }

    private enum Phase {
        case head
        case fixedBody(remaining: Int)
        case bodyUntilClose
        case chunkSizeLine
        case chunkData(remaining: Int)
        /// The line end after a chunk's data (`sawCR`: its CR has been read).
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case ended
    }

    package private(set) var status = 0
    /// The headers, when the parser was asked to keep them.
    package private(set) var headers: [(name: String, value: String)] = []
    package private(set) var body: [UInt8] = []
    /// Whether the connection may carry another request after this response: HTTP/1.1 without
    /// `Connection: close`, or HTTP/1.0 with `keep-alive`; never after a body delimited by
    /// the connection closing, or a response framed by both `Transfer-Encoding` and
    /// `Content-Length`.
    package private(set) var keepsAlive = false

    private let limits: Limits
    /// The headers kept in ``headers``, by lowercase name; nil: all of them.
    private let keptHeaders: [StaticString]?
    private var keepsHeaders: Bool { keptHeaders.map { !$0.isEmpty } ?? true }
    private let expectsBody: Bool
    private var phase = Phase.head
    /// A head (or chunk-size line) that began in an earlier input, when it did.
    private var partial: [UInt8] = []
    /// Bytes of the head, or of the trailers, read so far.
    private var lineBytesSeen = 0
    /// Bytes on the current line of the head or trailers so far, and the first of them.
    private var lineLength = 0
    private var lineFirstByte: UInt8 = 0

    /// `expectsBody`: false for a HEAD request, whose answer has none whatever it says.
    package init(limits: Limits, keepsHeaders: Bool, expectsBody: Bool) {
        self.init(limits: limits, keptHeaders: keepsHeaders ? nil : [], expectsBody: expectsBody)
    }

    /// A parser that keeps only the headers named in `keptHeaders` (lowercase; nil: all).
    package init(limits: Limits, keptHeaders: [StaticString]?, expectsBody: Bool) {
        // A negative limit (a client configured in code) refuses every head, as none fits.
        self.limits = Limits(maxHeadBytes: max(0, limits.maxHeadBytes), maxBodyBytes: limits.maxBodyBytes)
        self.keptHeaders = keptHeaders
        self.expectsBody = expectsBody
    }

    /// The response, once ``feed(_:)`` or ``endOfInput()`` said it is complete.
    package var response: UpstreamResponse {
        UpstreamResponse(status: status, headers: headers, body: body)
    }

    /// The response, moved out: the parser keeps none of its headers or bytes (a connection's
    /// parser waits for the next request holding nothing of the last answer).
    package mutating func takeResponse() -> UpstreamResponse {
        let response = UpstreamResponse(status: status, headers: headers, body: body)
        headers = []
        body = []
        return response
    }

    /// Reads a new response from here on, as a parser just made would (``init(limits:keptHeaders:expectsBody:)``).
    ///
    /// Why a connection keeps one parser and starts it again, rather than a `HTTPResponseParser?`
    /// made per request and set to nil after: each nil-ing and each replacing of the optional
    /// destroyed the old value through Swift's generic value witnesses, field by field: some
    /// 2,000 instructions of an N=10 `/groups` request's eleven calls (callgrind). Assigning a
    /// whole new value here, in the parser's own module, destroys the old one in place, and
    /// no field can be forgotten.
    package mutating func restart(limits: Limits, keptHeaders: [StaticString]?, expectsBody: Bool) {
        self = HTTPResponseParser(limits: limits, keptHeaders: keptHeaders, expectsBody: expectsBody)
    }

    /// Reads the next bytes of the answer. After `.complete` or `.failed`, feeds nothing more.
    package mutating func feed(_ input: UnsafeRawBufferPointer) -> Outcome {
        var index = 0
        while index < input.count {
            let outcome: Outcome?
            switch phase {
            case .head: outcome = readHead(input, from: &index)
            case .fixedBody(let remaining):
                let taken = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<index + taken]))
                index += taken
                phase = remaining == taken ? .ended : .fixedBody(remaining: remaining - taken)
                outcome = remaining == taken ? .complete(consumed: index) : nil
            case .bodyUntilClose:
                let taken = input.count - index
                outcome = admitBody(taken)
                if outcome == nil { body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index...])) }
                index += taken
            case .chunkSizeLine: outcome = readChunkSizeLine(input, from: &index)
            case .chunkData(let remaining):
                let taken = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[index..<index + taken]))
                index += taken
                phase = remaining == taken ? .chunkDataEnd(sawCR: false) : .chunkData(remaining: remaining - taken)
                outcome = nil
            case .chunkDataEnd(let sawCR):
                let byte = input[index]
                index += 1
                if byte == Self.cr && !sawCR {
                    phase = .chunkDataEnd(sawCR: true)
                    outcome = nil
                } else if byte == Self.lf {
                    phase = .chunkSizeLine
                    outcome = nil
                } else {
                    outcome = fail(.invalidResponse, "a chunk's data is not followed by a line end")
                }
            case .trailers: outcome = readTrailers(input, from: &index)
            case .ended: outcome = .failed(.invalidResponse, "bytes fed after the response ended")
            }
            if let outcome { return outcome }
        }
        return .needsMore
    }

    /// The connection closed: completes a body delimited by closing, and fails anything else
    /// unfinished.
    package mutating func endOfInput() -> Outcome {
        switch phase {
        case .bodyUntilClose:
            phase = .ended
            return .complete(consumed: 0)
        case .head where lineBytesSeen == 0:
            return fail(.connectionFailed, "connection closed before a response")
        case .ended:
            return .failed(.invalidResponse, "end of input after the response ended")
        default:
            return fail(.connectionFailed, "connection closed in the middle of a response")
        }
    }

    // MARK: - Head

    /// What ``parseHead(_:)`` made of the bytes it was given.
    private enum HeadReading {
        /// A head ended there (its empty line included) and was taken in.
        case taken(end: Int)
        /// The bytes up to the first empty line are not a well-formed head, or hold none.
        case malformed(String)
        /// A whole, well-formed head that fails the response (a protocol switch, a body
        /// announced past the limit).
        case refused(Outcome)
    }

    /// Reads a head: where it starts a read and comes whole in it (most answers' heads do),
    /// parsed where it lies; otherwise scanned for the empty line that ends it, across reads,
    /// and parsed once it is whole.
    ///
    /// The first way saves a pass over every head (the scan for its end) but decides nothing
    /// on its own: it takes only a whole, well-formed head within the head limit, which the
    /// second way would take the same, and leaves anything else (a head cut by the read's end,
    /// too long, malformed) to the second way, so each answer has the same outcome either way.
    private mutating func readHead(_ input: UnsafeRawBufferPointer, from index: inout Int) -> Outcome? {
        if lineBytesSeen == 0 && partial.isEmpty {
            let window = UnsafeRawBufferPointer(rebasing: input[index..<index + min(input.count - index, limits.maxHeadBytes)])
            switch parseHead(window) {
            case .taken(let end):
                index += end
                return headTaken(at: index)
            case .refused(let outcome):
                return outcome
            case .malformed:
                status = 0
                headers = []
            }
        }
        let start = index
        let (found, failure) = scanWithinHeadLimit(input, from: &index, "response head")
        if let failure { return failure }
        let piece = UnsafeRawBufferPointer(rebasing: input[start..<index])
        guard found else {
            partial.append(contentsOf: piece)
            return nil
        }
        let reading: HeadReading
        if partial.isEmpty {
            reading = parseHead(piece)
        } else {
            partial.append(contentsOf: piece)
            let head = partial
            reading = head.withUnsafeBytes { parseHead($0) }
            partial = []
        }
        switch reading {
        case .taken: return headTaken(at: index)
        case .refused(let outcome): return outcome
        case .malformed(let detail): return fail(.invalidResponse, detail)
        }
    }

    /// A head was taken in, ending before `index`: the answer is complete when it has no body.
    private mutating func headTaken(at index: Int) -> Outcome? {
        lineBytesSeen = 0
        if case .ended = phase { return .complete(consumed: index) }
        return nil
    }

    /// ``scanToEmptyLine(_:from:)``, counting the bytes against the head limit (the trailers
    /// count again from zero): whether the empty line came, or the failure past the limit.
    private mutating func scanWithinHeadLimit(
        _ input: UnsafeRawBufferPointer, from index: inout Int, _ what: String
    ) -> (found: Bool, failure: Outcome?) {
        let start = index
        let found = scanToEmptyLine(input, from: &index)
        lineBytesSeen += index - start
        guard lineBytesSeen <= limits.maxHeadBytes else {
            return (false, fail(.responseTooLarge, "\(what) exceeds \(limits.maxHeadBytes) bytes"))
        }
        return (found, nil)
    }

    /// Moves `index` past the next empty line (LF or CR LF alone), or to the end of `input`
    /// when there is none yet; the current line's length carries over to the next input.
    private mutating func scanToEmptyLine(_ input: UnsafeRawBufferPointer, from index: inout Int) -> Bool {
        while index < input.count {
            if lineLength == 0 { lineFirstByte = input[index] }
            guard let lineEnd = HTTPSyntax.firstIndex(of: Self.lf, in: input, from: index) else {
                lineLength += input.count - index
                index = input.count
                return false
            }
            let length = lineLength + lineEnd - index
            index = lineEnd + 1
            lineLength = 0
            if length == 0 || (length == 1 && lineFirstByte == Self.cr) { return true }
        }
        return false
    }

    /// Parses a head from the start of `head` up to its first empty line, and decides how the
    /// body is framed. Until the head is whole and well-formed it changes nothing but
    /// ``status`` and ``headers``.
    private mutating func parseHead(_ head: UnsafeRawBufferPointer) -> HeadReading {
        let statusLineEnd = HTTPSyntax.firstIndex(of: Self.lf, in: head) ?? head.count
        guard let parsedStatus = Self.parseStatusLine(Self.withoutCR(UnsafeRawBufferPointer(rebasing: head[..<statusLineEnd]))) else {
            return .malformed("malformed status line")
        }
        status = parsedStatus.status
        var keepsAlive = parsedStatus.minorVersion >= 1
        var contentLength: Int?
        var transferEncoding: UnsafeRawBufferPointer?
        headers = []
        var lineStart = statusLineEnd + 1
        while true {
            // `name: value`, in one pass over the line: the name's bytes up to the first that
            // is not a token byte, which must be the colon (a folded line, whitespace before the
            // colon: refused); then the value's up to its line end (``endOfValue(in:from:)``).
            let colon = HTTPSyntax.endOfToken(in: head, from: lineStart)
            // No name: the empty line that ends the head (CR and LF are no token bytes), or a
            // malformed line. Tested only then, not before every line.
            if colon == lineStart && Self.isEmptyLine(head, at: lineStart) { break }
            guard colon > lineStart, colon < head.count, head[colon] == Self.colonByte,
                  let (valueEnd, nextLine) = Self.endOfValue(in: head, from: colon + 1) else {
                return .malformed("malformed header line")
            }
            let name = UnsafeRawBufferPointer(rebasing: head[lineStart..<colon])
            let value = Self.trimmingWhitespace(UnsafeRawBufferPointer(rebasing: head[(colon + 1)..<valueEnd]))
            lineStart = nextLine
            if HTTPSyntax.tokenEqualsIgnoringCase(name, "content-length") {
                guard let length = Self.parseDecimal(value), contentLength == nil || contentLength == length else {
                    return .malformed("invalid Content-Length")
                }
                contentLength = length
            } else if HTTPSyntax.tokenEqualsIgnoringCase(name, "transfer-encoding") {
                // Repeated, the last one's last coding is the final one.
                transferEncoding = value
            } else if HTTPSyntax.tokenEqualsIgnoringCase(name, "connection") {
                Self.forEachListElement(value) { option in
                    if HTTPSyntax.equalsIgnoringCase(option, "close") { keepsAlive = false }
                    if parsedStatus.minorVersion == 0 && HTTPSyntax.equalsIgnoringCase(option, "keep-alive") { keepsAlive = true }
                }
            }
            if keepsHeaders {
                if let keptHeaders {
                    // Under the lowercase name asked for: read back with `==`, not without case.
                    if let kept = keptHeaders.first(where: { HTTPSyntax.tokenEqualsIgnoringCase(name, $0) }) {
                        headers.append((kept.description, String(decoding: value, as: UTF8.self)))
                    }
                } else {
                    headers.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
                }
            }
        }
        let end = lineStart + (head[lineStart] == Self.lf ? 1 : 2)
        switch status {
        case 101:
            return .refused(fail(.invalidResponse, "an unrequested protocol switch (101)"))
        case 100...199:
            // Interim answer: the final one follows.
            status = 0
            headers = []
            return .taken(end: end)
        default: break
        }
        self.keepsAlive = keepsAlive
        if !expectsBody || status == 204 || status == 304 {
            phase = .ended
        } else if let transferEncoding {
            // RFC 9112 §6.3: the encoding overrides any length, and such an answer is not
            // trusted with the connection after it.
            if contentLength != nil || parsedStatus.minorVersion == 0 { self.keepsAlive = false }
            var finalCoding: UnsafeRawBufferPointer?
            Self.forEachListElement(transferEncoding) { finalCoding = $0 }
            if let finalCoding, HTTPSyntax.equalsIgnoringCase(finalCoding, "chunked") {
                phase = .chunkSizeLine
            } else {
                phase = .bodyUntilClose
                self.keepsAlive = false
            }
        } else if let contentLength {
            if let failure = admitBody(contentLength) { return .refused(failure) }
            // Room for what is announced, up to a first read's worth: a length alone does not
            // reserve megabytes per connection before a byte of the body has come.
            body.reserveCapacity(min(contentLength, 64 * 1024))
            phase = contentLength == 0 ? .ended : .fixedBody(remaining: contentLength)
        } else {
            phase = .bodyUntilClose
            self.keepsAlive = false
        }
        return .taken(end: end)
    }

    /// `HTTP/1.x SSS[ reason]`: the minor version and status, or nil. Inlined, and its first
    /// seven bytes compared as one word: every upstream answer's first line passes here.
    @inline(__always)
    private static func parseStatusLine(_ line: UnsafeRawBufferPointer) -> (minorVersion: Int, status: Int)? {
        guard line.count >= 12, line.count == 12 || line[12] == space,
              ByteWords.load(line, at: 0) & 0x00FF_FFFF_FFFF_FFFF == httpVersionPrefix,
              isDigit(line[7]), line[8] == space, isDigit(line[9]), isDigit(line[10]), isDigit(line[11])
        else { return nil }
        let status = Int(line[9] - zero) * 100 + Int(line[10] - zero) * 10 + Int(line[11] - zero)
        guard status >= 100, HTTPSyntax.firstForbiddenInValue(line, from: 12) == line.count else { return nil }
        return (Int(line[7] - zero), status)
    }

    /// `HTTP/1.` as the low seven bytes of a little-endian word (``ByteWords/load(_:at:)``).
    private static let httpVersionPrefix: UInt64 = 0x2E_31_2F_50_54_54_48

    /// Where a field value that starts at `start` ends, and where the next line starts: the
    /// value runs to the first control byte other than a tab (eight bytes at a time; every
    /// header of every upstream answer passes here), which must be its line's end, LF or CR LF.
    /// Nil for any other control byte, a CR that does not end the line, or no line end.
    /// Inlined into ``parseHead(_:)``'s loop: called, it cost the call, and the word scan's
    /// constants loaded again, for every header.
    @inline(__always)
    private static func endOfValue(in head: UnsafeRawBufferPointer, from start: Int) -> (valueEnd: Int, nextLine: Int)? {
        let stop = HTTPSyntax.firstForbiddenInValue(head, from: start)
        if stop < head.count, head[stop] == lf { return (stop, stop + 1) }
        if stop + 1 < head.count, head[stop] == cr, head[stop + 1] == lf { return (stop, stop + 2) }
        return nil
    }

    /// `bytes` without the spaces and tabs around them.
    private static func trimmingWhitespace(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        var start = 0
        var end = bytes.count
        while start < end, HTTPSyntax.isWhitespace(bytes[start]) { start += 1 }
        while end > start, HTTPSyntax.isWhitespace(bytes[end - 1]) { end -= 1 }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<end])
    }

    /// Whether the line at `start` is empty (LF or CR LF alone): the end of the head.
    private static func isEmptyLine(_ head: UnsafeRawBufferPointer, at start: Int) -> Bool {
        guard start < head.count else { return false }
        return head[start] == lf || (head[start] == cr && start + 1 < head.count && head[start + 1] == lf)
    }

    // MARK: - Chunked body

    /// Reads a chunk-size line (`hex[;extensions]`), bounded by ``maxChunkSizeLine``.
    private mutating func readChunkSizeLine(_ input: UnsafeRawBufferPointer, from index: inout Int) -> Outcome? {
        let start = index
        index = HTTPSyntax.firstIndex(of: Self.lf, in: input, from: index) ?? input.count
        let found = index < input.count
        let piece = UnsafeRawBufferPointer(rebasing: input[start..<index])
        guard partial.count + piece.count <= Self.maxChunkSizeLine + 1 else {
            return fail(.invalidResponse, "a chunk-size line longer than \(Self.maxChunkSizeLine) bytes")
        }
        guard found else {
            partial.append(contentsOf: piece)
            return nil
        }
        index += 1
        let size: Int?
        if partial.isEmpty {
            size = Self.parseChunkSize(piece)
        } else {
            partial.append(contentsOf: piece)
            size = partial.withUnsafeBytes(Self.parseChunkSize)
            partial = []
        }
        guard let size else { return fail(.invalidResponse, "malformed chunk-size line") }
        if size == 0 {
            phase = .trailers
            lineLength = 0
            lineBytesSeen = 0
            return nil
        }
        if let failure = admitBody(size) { return failure }
        phase = .chunkData(remaining: size)
        return nil
    }

    /// The size of a chunk-size line without its LF: 1 to 15 hex digits, then nothing or
    /// extensions (`;…`, after optional whitespace); one CR may end it.
    private static func parseChunkSize(_ line: UnsafeRawBufferPointer) -> Int? {
        var end = line.count
        if end > 0 && line[end - 1] == cr { end -= 1 }
        var size = 0
        var index = 0
        while index < end, let digit = HTTPSyntax.hexValue(line[index]) {
            guard index < 15 else { return nil }
            size = size << 4 | Int(digit)
            index += 1
        }
        guard index > 0 else { return nil }
        while index < end, HTTPSyntax.isWhitespace(line[index]) { index += 1 }
        guard index == end || line[index] == semicolon else { return nil }
        for position in index..<end where HTTPSyntax.isForbiddenInValue(line[position]) { return nil }
        return size
    }

    /// Skips the trailer lines after the last chunk, up to the empty line, within the head limit.
    private mutating func readTrailers(_ input: UnsafeRawBufferPointer, from index: inout Int) -> Outcome? {
        let (found, failure) = scanWithinHeadLimit(input, from: &index, "response trailers")
        if let failure { return failure }
        guard found else { return nil }
        phase = .ended
        return .complete(consumed: index)
    }

    // MARK: - Helpers

    /// A failure when `count` more body bytes would pass the limit.
    private mutating func admitBody(_ count: Int) -> Outcome? {
        guard count > limits.maxBodyBytes - body.count else { return nil }
        return fail(.responseTooLarge, "response exceeds \(limits.maxBodyBytes) bytes")
    }

    private mutating func fail(_ kind: UpstreamError.Kind, _ detail: String) -> Outcome {
        phase = .ended
        keepsAlive = false
        return .failed(kind, detail)
    }

    /// A line without the one CR that may end it (its LF already left out).
    @inline(__always)
    private static func withoutCR(_ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        guard let last = line.last, last == cr else { return line }
        return UnsafeRawBufferPointer(rebasing: line.dropLast())
    }

    /// 1 to 18 decimal digits (what fits an `Int`), nothing else.
    private static func parseDecimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
        var value = 0
        for byte in bytes {
            guard isDigit(byte) else { return nil }
            value = value * 10 + Int(byte - zero)
        }
        return value
    }

    /// Calls `body` with each element of a comma-separated header value, without surrounding
    /// whitespace (empty elements skipped), in order; without allocating.
    private static func forEachListElement(_ value: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Void) {
        var start = 0
        while start < value.count {
            var end = start
            while end < value.count, value[end] != comma { end += 1 }
            var first = start
            var last = end
            while first < last, HTTPSyntax.isWhitespace(value[first]) { first += 1 }
            while last > first, HTTPSyntax.isWhitespace(value[last - 1]) { last -= 1 }
            if first < last { body(UnsafeRawBufferPointer(rebasing: value[first..<last])) }
            start = end + 1
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- zero < 10 }

    private static let cr = UInt8(ascii: "\r")
    private static let lf = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " ")
    private static let zero = UInt8(ascii: "0")
    private static let colonByte = UInt8(ascii: ":")
    private static let semicolon = UInt8(ascii: ";")
    private static let comma = UInt8(ascii: ",")
}
