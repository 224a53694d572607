@testable import HTTPCore
@testable import UpstreamClient
import Testing
import TestThreads

/// The byte checks of the upstream wire code (``HTTPSyntax``, ``RequestHead``) against the
/// rules written out plainly, byte by byte: the bit table and the word-at-a-time scans must
/// accept and refuse exactly what those rules do, wherever a byte sits in a word.
@Suite("Wire syntax: fast byte checks agree with the plain rules", .ownThread)
struct WireSyntaxTests {
    /// RFC 9110 §5.6.2's `tchar`, spelled out.
    static let tchars = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))

    static func isForbiddenInValue(_ byte: UInt8) -> Bool { (byte < 0x20 && byte != 0x09) || byte == 0x7F }

    @Test("a token byte is exactly a tchar, for each of the 256 bytes")
    func tokenBytes() {
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPSyntax.isTokenByte(byte) == Self.tchars.contains(byte), "byte \(byte)")
        }
        let name = Array("X-Name!".utf8) + [0x80] + Array("rest".utf8)
        #expect(name.withUnsafeBytes { HTTPSyntax.endOfToken(in: $0, from: 0) } == 7)
        #expect(name.withUnsafeBytes { HTTPSyntax.endOfToken(in: $0, from: 8) } == name.count)
    }

    /// Hands `check` each buffer of each of `lengths` that is `filler` but for one byte, of
    /// every value, at every position; the first mismatch `check` describes is recorded with
    /// the buffer's making, and ends the walk (one is enough, and thousands would drown it).
    static func everyByteAtEveryPosition(
        over filler: UInt8, lengths: [Int], sourceLocation: SourceLocation = #_sourceLocation, _ check: ([UInt8]) -> String?
    ) {
        for length in lengths {
            for position in 0..<length {
                for byte in UInt8.min...UInt8.max {
                    var bytes = [UInt8](repeating: filler, count: length)
                    bytes[position] = byte
                    if let mismatch = check(bytes) {
                        Issue.record("filler \(filler), byte \(byte) at \(position) of \(length), \(mismatch)", sourceLocation: sourceLocation)
                        return
                    }
                }
            }
        }
    }

    /// Every byte value at every position, over fillers of each kind of token byte.
    @Test("a token ends at its first non-token byte wherever it sits", arguments: Array("aZz09-!".utf8))
    func tokenEnd(filler: UInt8) {
        Self.everyByteAtEveryPosition(over: filler, lengths: [1, 7, 8, 9, 16, 17, 24]) { bytes in
            for start in [0, 1, 3] where start <= bytes.count {
                let expected = (start..<bytes.count).first { !Self.tchars.contains(bytes[$0]) } ?? bytes.count
                let found = bytes.withUnsafeBytes { HTTPSyntax.endOfToken(in: $0, from: start) }
                if found != expected { return "from \(start): \(found), not \(expected)" }
            }
            return nil
        }
        // Two bytes that differ from the class only in case or in one bit, side by side.
        for first in UInt8.min...UInt8.max {
            for second in [UInt8(0x2D), 0x0D, 0x2F, 0x3A, 0x40, 0x5B, 0x60, 0x7B, 0x30, 0x39, 0x41, 0x5A, 0x61, 0x7A, 0xC1, 0xED] {
                let bytes = [first, second] + Array("abcdef".utf8)
                let expected = bytes.firstIndex { !Self.tchars.contains($0) } ?? bytes.count
                #expect(bytes.withUnsafeBytes { HTTPSyntax.endOfToken(in: $0, from: 0) } == expected, "\(first), \(second)")
            }
        }
    }

    @Test("a token is compared with a name word by word exactly as byte by byte, whatever token byte sits anywhere in it")
    func tokenNames() {
        func check(_ name: StaticString) {
            let lowercase = Array(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            let uppercase = lowercase.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }
            for base in [lowercase, uppercase] {
                for position in 0..<base.count {
                    for byte in Self.tchars {
                        var token = base
                        token[position] = byte
                        let fast = token.withUnsafeBytes { HTTPSyntax.tokenEqualsIgnoringCase($0, name) }
                        let plain = token.withUnsafeBytes { HTTPSyntax.equalsIgnoringCase($0, name) }
                        #expect(fast == plain, "\(String(decoding: token, as: UTF8.self)) vs \(name)")
                    }
                }
                for length in [base.count - 1, base.count + 1] {
                    let token = Array((base + base).prefix(length))
                    #expect(!token.withUnsafeBytes { HTTPSyntax.tokenEqualsIgnoringCase($0, name) })
                }
            }
        }
        check("host")
        check("connection")
        check("content-length")
        check("transfer-encoding")
        let mixed = Array("CoNtEnT-LeNgTh".utf8)
        #expect(mixed.withUnsafeBytes { HTTPSyntax.tokenEqualsIgnoringCase($0, "content-length") })
    }

    /// Every byte value at every position of buffers up to three words long, over fillers that
    /// are allowed but near the edges (a tab, 0x20, 0x7E, 0x80, 0xFF), from several starts.
    @Test("the first byte forbidden in a value is found wherever it sits, and only it", arguments: [0x61, 0x09, 0x20, 0x7E, 0x80, 0xFF] as [UInt8])
    func forbiddenInValue(filler: UInt8) {
        Self.everyByteAtEveryPosition(over: filler, lengths: [1, 7, 8, 9, 15, 16, 17, 24]) { bytes in
            for start in [0, 1, 5] where start <= bytes.count {
                let expected = (start..<bytes.count).first { Self.isForbiddenInValue(bytes[$0]) } ?? bytes.count
                let found = bytes.withUnsafeBytes { HTTPSyntax.firstForbiddenInValue($0, from: start) }
                if found != expected { return "from \(start): \(found), not \(expected)" }
            }
            return nil
        }
    }

    @Test("a word's lowest marked byte is its first control byte; a word without one has no mark")
    func controlByteMarks() {
        var generator = SystemRandomNumberGenerator()
        // Bytes drawn mostly from the edges, where a borrow or a masked high bit could mislead.
        let interesting: [UInt8] = [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x7E, 0x7F, 0x80, 0x81, 0x9F, 0xA0, 0xFE, 0xFF]
        for _ in 0..<200_000 {
            let bytes = (0..<8).map { _ in
                Bool.random(using: &generator) ? interesting.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator)
            }
            let word = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
            let first = bytes.firstIndex { $0 < 0x20 || $0 == 0x7F }
            let marks = HTTPSyntax.controlBytes(in: word)
            if (marks == 0 ? nil : marks.trailingZeroBitCount / 8) != first {
                Issue.record("bytes \(bytes): marks \(String(marks, radix: 16)), first control byte at \(first.map(String.init) ?? "none")")
                return
            }
        }
    }

    // MARK: - Percent-encoding

    static let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)

    /// RFC 3986's rule, byte by byte: unreserved bytes as they are, any other as `%XX`.
    static func plainlyPercentEncoded(_ bytes: [UInt8]) -> [UInt8] {
        var encoded: [UInt8] = []
        encoded.reserveCapacity(3 * bytes.count)
        for byte in bytes { encoded.append(contentsOf: plainEncodings[Int(byte)]) }
        return encoded
    }

    /// Each byte's encoding by the rule, made once: the exhaustive test below encodes ~450,000
    /// inputs, and building each byte's encoding anew for each held both of a debug run's
    /// pool threads for seconds (timing tests elsewhere in a parallel run then stalled).
    static let plainEncodings: [[UInt8]] = {
        let hex = Array("0123456789ABCDEF".utf8)
        return (0...255).map { (byte: Int) -> [UInt8] in
            unreserved.contains(UInt8(byte)) ? [UInt8(byte)] : [UInt8(ascii: "%"), hex[byte >> 4], hex[byte & 0xF]]
        }
    }()

    /// Every byte value at every position of inputs up to three words long, over fillers
    /// copied by the word (a letter, a digit, `-`, `.`) or byte by byte (`_`, `~`, `/`, 0xC3),
    /// into exactly the room the encoding takes and into room for every byte encoded.
    @Test("percent-encoding word by word writes exactly the bytes of the plain rule, wherever a byte sits", arguments: Array("aZ0-._~/".utf8) + [0xC3])
    func percentEncodingByWords(filler: UInt8) {
        Self.everyByteAtEveryPosition(over: filler, lengths: [1, 7, 8, 9, 15, 16, 17, 24]) { bytes in
            let expected = Self.plainlyPercentEncoded(bytes)
            for room in [expected.count, 3 * bytes.count] {
                let encoded = bytes.withUnsafeBufferPointer { input in
                    [UInt8](unsafeUninitializedCapacity: room) { output, count in
                        count = QueryString.writePercentEncoded(input, into: UnsafeMutableBufferPointer(rebasing: output[..<room]))
                    }
                }
                if encoded != expected { return "room \(room): \(encoded), not \(expected)" }
            }
            return nil
        }
        let uuid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
        #expect(QueryString.percentEncoded(uuid) == uuid)
        #expect(QueryString.percentEncoded("abcdefgh/ijklmnop_q~r.s-t%") == "abcdefgh%2Fijklmnop_q~r.s-t%25")
    }

    @Test("a word's marks of bytes that are not letters, digits, - or . are exact, one per such byte")
    func alphanumericDashDotMarks() {
        let copiedByWord = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.".utf8)
        let lettersOrHyphen = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-".utf8)
        for byte in UInt8.min...UInt8.max {
            for position in 0..<8 {
                // The byte amid letters, and amid bytes that are not.
                for filler in [UInt8(ascii: "a"), 0x2F] {
                    var word = UInt64(0)
                    for index in 0..<8 { word |= UInt64(index == position ? byte : filler) << (8 * UInt64(index)) }
                    var expectedUnreserved = UInt64(0)
                    var expectedToken = UInt64(0)
                    for index in 0..<8 {
                        let value = index == position ? byte : filler
                        if !copiedByWord.contains(value) { expectedUnreserved |= 0x80 << (8 * UInt64(index)) }
                        if !lettersOrHyphen.contains(value) { expectedToken |= 0x80 << (8 * UInt64(index)) }
                    }
                    #expect(QueryString.notAlphanumericDashOrDot(in: word) == expectedUnreserved, "byte \(byte) at \(position), filler \(filler)")
                    #expect(HTTPSyntax.notLettersOrHyphens(in: word) == expectedToken, "byte \(byte) at \(position), filler \(filler)")
                }
            }
        }
    }

    // MARK: - The request head

    static func head(headers: [(String, String)], method: HTTPMethod = .get, body: [UInt8] = []) throws -> String {
        let request = UpstreamRequest(base: try BaseURL("http://upstream.test:8080/api"), method: method, path: "/items?x=1", headers: headers, body: body)
        var bytes: [UInt8] = []
        RequestHead.write(request, hostHeader: request.base.origin.hostHeader, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("the request head is written whole: request line, Host, headers in order, Content-Length, body")
    func requestHead() throws {
        #expect(try Self.head(headers: [("Accept", "application/json"), ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")])
            == "GET /api/items?x=1 HTTP/1.1\r\nHost: upstream.test:8080\r\nAccept: application/json\r\n"
            + "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n")
        #expect(try Self.head(headers: [("X-Long", String(repeating: "v", count: 5000))], method: .post, body: Array("{}".utf8))
            == "POST /api/items?x=1 HTTP/1.1\r\nHost: upstream.test:8080\r\nX-Long: \(String(repeating: "v", count: 5000))\r\n"
            + "Content-Length: 2\r\n\r\n{}")
        #expect(try Self.head(headers: [], method: .put) == "PUT /api/items?x=1 HTTP/1.1\r\nHost: upstream.test:8080\r\nContent-Length: 0\r\n\r\n")
        #expect(try Self.head(headers: [("host", "evil"), ("Content-Length", "9"), ("TRANSFER-ENCODING", "chunked"), ("", "x"), ("X-Ok", "")])
            == "GET /api/items?x=1 HTTP/1.1\r\nHost: upstream.test:8080\r\nX-Ok: \r\n\r\n")
    }

    @Test("headers checked once keep only what may go on the wire, go first, and give way to a call's trace")
    func checkedHeaders() throws {
        let checked = CheckedHeaders([("Accept", "application/json"), ("X-Bad", "a\r\nInjected: 1"), ("Host", "evil"), ("", "x")])
            .appending([("Authorization", "Bearer a"), ("Content-Length", "9"), ("traceparent", "caller"), ("Bad Name", "1")])
        #expect(checked.fields.map { "\($0.0)=\($0.1)" } == ["Accept=application/json", "Authorization=Bearer a", "traceparent=caller"])
        let base = try BaseURL("http://upstream.test:8080")
        var bytes: [UInt8] = []
        let plain = UpstreamRequest(base: base, path: "/items", checkedHeaders: checked, headers: [("If-None-Match", #""v1""#)])
        RequestHead.write(plain, hostHeader: base.origin.hostHeader, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "GET /items HTTP/1.1\r\nHost: upstream.test:8080\r\nAccept: application/json\r\n"
            + "Authorization: Bearer a\r\ntraceparent: caller\r\nIf-None-Match: \"v1\"\r\n\r\n")
        let trace = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: nil)
        bytes = []
        RequestHead.write(UpstreamRequest(base: base, path: "/items", checkedHeaders: checked, trace: trace), hostHeader: base.origin.hostHeader, into: &bytes)
        let traced = String(decoding: bytes, as: UTF8.self)
        #expect(traced.hasPrefix("GET /items HTTP/1.1\r\nHost: upstream.test:8080\r\nAccept: application/json\r\nAuthorization: Bearer a\r\n"
            + "traceparent: 00-0af7651916cd43dd8448eb211c80319c-") && !traced.contains("caller"), "\(traced)")
        let long = CheckedHeaders([("X-Fill", String(repeating: "v", count: 2_000))])
        bytes = []
        RequestHead.write(UpstreamRequest(base: base, path: "/items", checkedHeaders: long), hostHeader: base.origin.hostHeader, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self).hasSuffix("X-Fill: \(String(repeating: "v", count: 2_000))\r\n\r\n"), "measured, past the usual buffer")
    }

    static func head(headers: [(String, String)], trace: TraceContext) throws -> String {
        let request = UpstreamRequest(base: try BaseURL("http://upstream.test:8080/api"), path: "/items", headers: headers, trace: trace)
        var bytes: [UInt8] = []
        RequestHead.write(request, hostHeader: request.base.origin.hostHeader, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("a request's trace is written from it: traceparent with a new span id each time, tracestate, and never the caller's own")
    func requestHeadTrace() throws {
        let trace = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "congo=t61")
        let callerHeaders = [("Accept", "application/json"), ("TraceParent", "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-00"), ("tracestate", "evil=1")]
        let heads = try (0..<2).map { _ in try Self.head(headers: callerHeaders, trace: trace) }
        let spans = heads.map { head -> String in
            let prefix = "GET /api/items HTTP/1.1\r\nHost: upstream.test:8080\r\nAccept: application/json\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-"
            let suffix = "-01\r\ntracestate: congo=t61\r\n\r\n"
            #expect(head.hasPrefix(prefix) && head.hasSuffix(suffix), "\(head)")
            return String(head.dropFirst(prefix.count).dropLast(suffix.count))
        }
        #expect(spans.allSatisfy { $0.utf8.count == 16 && $0.utf8.allSatisfy(LowercaseHex.isDigit) }, "\(spans)")
        #expect(spans[0] != spans[1], "each write is a span of its own")

        // A tracestate that cannot go on the wire as one line is left out, as a caller's header would be.
        let unsendable = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "a=1\r\nX-Evil: 1")
        let head = try Self.head(headers: [], trace: unsendable)
        #expect(head.hasPrefix("GET /api/items HTTP/1.1\r\nHost: upstream.test:8080\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-"))
        #expect(!head.contains("tracestate") && !head.contains("X-Evil") && head.hasSuffix("-01\r\n\r\n"), "\(head)")

        // Past the usual buffer, the measured head has room for the trace too.
        let long = try Self.head(headers: [("X-Fill", String(repeating: "v", count: 1_000))], trace: trace)
        #expect(long.contains("X-Fill: \(String(repeating: "v", count: 1_000))\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-")
            && long.hasSuffix("-01\r\ntracestate: congo=t61\r\n\r\n"))
    }

    @Test("a trace set on a request after it was made is the one written; set to nil, none is, and the caller's own goes out")
    func requestTraceSetLater() throws {
        let trace = TraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "congo=t61")
        var request = UpstreamRequest(base: try BaseURL("http://upstream.test:8080"), path: "/items", headers: [("traceparent", "caller")])
        #expect(request.trace == nil)
        request.trace = trace
        #expect(request.trace == trace)
        var bytes: [UInt8] = []
        RequestHead.write(request, hostHeader: request.base.origin.hostHeader, into: &bytes)
        let traced = String(decoding: bytes, as: UTF8.self)
        #expect(traced.hasPrefix("GET /items HTTP/1.1\r\nHost: upstream.test:8080\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-")
            && traced.hasSuffix("-01\r\ntracestate: congo=t61\r\n\r\n"), "\(traced)")
        request.trace = nil
        #expect(request.trace == nil)
        bytes = []
        RequestHead.write(request, hostHeader: request.base.origin.hostHeader, into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "GET /items HTTP/1.1\r\nHost: upstream.test:8080\r\ntraceparent: caller\r\n\r\n")
    }

    /// A head of up to a kilobyte is written in one buffer; a longer one is measured and
    /// written again: the same bytes either way, around the boundary too.
    @Test("a head is written the same whatever its length, around the usual buffer's size too")
    func requestHeadLengths() throws {
        let prefix = "GET /api/items?x=1 HTTP/1.1\r\nHost: upstream.test:8080\r\n"
        for length in Array(950...1_050) + [4_096, 70_000] {
            let value = String(repeating: "v", count: length)
            let head = try Self.head(headers: [("X-Fill", value), ("X-Left-Out", "a\nb"), ("X-After", "1")])
            #expect(head == prefix + "X-Fill: \(value)\r\nX-After: 1\r\n\r\n", "value of \(length) bytes")
        }
    }

    @Test("a header is sent or left out by the byte rule, for each of the 256 bytes in its name and in its value")
    func requestHeaderBytes() throws {
        for byte in UInt8.min...UInt8.max {
            for position in [0, 3, 7, 8, 12] {
                var name = Array("X-Header-Name".utf8)
                name[position] = byte
                var value = Array("some value, long".utf8)
                value[position] = byte
                let nameText = String(decoding: name, as: UTF8.self)
                let valueText = String(decoding: value, as: UTF8.self)
                // As Strings: a byte over 0x7F is not valid UTF-8 alone and is repaired, so the
                // rule is checked on the bytes the String really holds.
                let nameSent = !nameText.utf8.isEmpty && nameText.utf8.allSatisfy(Self.tchars.contains)
                let valueSent = !valueText.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
                let withName = try Self.head(headers: [(nameText, "v"), ("X-After", "1")])
                #expect(withName.contains("\(nameText): v\r\n") == nameSent, "name byte \(byte) at \(position)")
                let withValue = try Self.head(headers: [("X-Value", valueText), ("X-After", "1")])
                #expect(withValue.contains("X-Value: \(valueText)\r\n") == valueSent, "value byte \(byte) at \(position)")
                #expect(withName.hasSuffix("X-After: 1\r\n\r\n") && withValue.hasSuffix("X-After: 1\r\n\r\n"))
            }
        }
    }

    @Test("16 lowercase hex digits per value, leading zeros kept, as String(radix: 16) padded would write them")
    func lowercaseHex() {
        for value: UInt64 in [0, 1, 0xA, 0xFF, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, .max] {
            let plain = String(value, radix: 16)
            #expect(LowercaseHex.string(value) == String(repeating: "0", count: 16 - plain.count) + plain)
        }
        #expect(LowercaseHex.string(0xF, 0x1_0000_0000) == "000000000000000f0000000100000000")
        #expect((0...255).filter { LowercaseHex.isDigit(UInt8($0)) }.map { Character(UnicodeScalar(UInt8($0))) } == Array("0123456789abcdef"))
    }
}
