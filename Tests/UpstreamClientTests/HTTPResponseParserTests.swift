import UpstreamClient
import Testing

/// The upstream client's response parser on its own: how each framing is read, what keeps a
/// connection alive, and what is refused, whether the bytes arrive at once or one at a time.
/// (`UpstreamResponseFramingTests` checks the same over real sockets; the fuzz target
/// `UpstreamResponse` checks that any split gives the same result.)
@Suite("HTTP response parser")
struct HTTPResponseParserTests {
    struct Parsed: Equatable, CustomStringConvertible {
        var status: Int
        var body: String
        var keepsAlive: Bool
        /// Where the response ended in the input, or nil when it took the connection's close.
        var end: Int?

        var description: String { "\(status) \(body.debugDescription) keep-alive: \(keepsAlive) end: \(end.map(String.init) ?? "close")" }
    }

    static let limits = HTTPResponseParser.Limits(maxHeadBytes: 256, maxBodyBytes: 64)

    /// Feeds `text` whole, then one byte at a time, then closes the input if the response is
    /// not complete; both ways must agree.
    static func parse(_ text: String, expectsBody: Bool = true, keepsHeaders: Bool = false) -> Result<Parsed, ParseFailure> {
        let bytes = Array(text.utf8)
        func run(pieceSize: Int) -> Result<Parsed, ParseFailure> {
            var parser = HTTPResponseParser(limits: limits, keepsHeaders: keepsHeaders, expectsBody: expectsBody)
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + pieceSize)
                let outcome = bytes[offset..<end].withUnsafeBytes { parser.feed($0) }
                switch outcome {
                case .needsMore: offset = end
                case .complete(let consumed):
                    return .success(Parsed(status: parser.status, body: String(decoding: parser.body, as: UTF8.self),
                                           keepsAlive: parser.keepsAlive, end: offset + consumed))
                case .failed(let kind, let detail): return .failure(ParseFailure(kind: kind, detail: detail))
                }
            }
            switch parser.endOfInput() {
            case .complete:
                return .success(Parsed(status: parser.status, body: String(decoding: parser.body, as: UTF8.self),
                                       keepsAlive: parser.keepsAlive, end: nil))
            case .failed(let kind, let detail): return .failure(ParseFailure(kind: kind, detail: detail))
            case .needsMore: return .failure(ParseFailure(kind: .connectionFailed, detail: "needs more at end of input"))
            }
        }
        let whole = run(pieceSize: max(1, bytes.count))
        let byteByByte = run(pieceSize: 1)
        #expect(whole == byteByByte, "at once and byte by byte disagree")
        return whole
    }

    struct ParseFailure: Error, Equatable {
        var kind: UpstreamError.Kind
        var detail: String
    }

    static let framedAnswers: [(String, Parsed)] = [
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", Parsed(status: 200, body: "hello", keepsAlive: true, end: 43)),
        ("HTTP/1.1 201 Created\r\ncontent-length:2\r\n\r\nok", Parsed(status: 201, body: "ok", keepsAlive: true, end: 44)),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n",
         Parsed(status: 200, body: "hello0123456789", keepsAlive: true, end: 89)),
        ("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", Parsed(status: 200, body: "ok", keepsAlive: true, end: 37)),
        ("HTTP/1.1 200 OK\r\n\r\nuntil close", Parsed(status: 200, body: "until close", keepsAlive: false, end: nil)),
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", Parsed(status: 200, body: "ok", keepsAlive: false, end: 40)),
        ("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
         Parsed(status: 200, body: "ok", keepsAlive: true, end: 64)),
        ("HTTP/1.1 200 OK\r\nConnection: foo, close\r\nContent-Length: 2\r\n\r\nok",
         Parsed(status: 200, body: "ok", keepsAlive: false, end: 64)),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", Parsed(status: 200, body: "raw", keepsAlive: false, end: nil)),
    ]

    @Test("a body is framed by Content-Length, by chunks or by the connection closing", arguments: framedAnswers)
    func framing(response: String, expected: Parsed) throws {
        #expect(try Self.parse(response).get() == expected)
    }

    /// Feeds `bytes` whole to `parser`, then the input's end if it needs more: the outcome and
    /// the response it read.
    static func read(_ bytes: [UInt8], with parser: inout HTTPResponseParser) -> (HTTPResponseParser.Outcome, UpstreamResponse) {
        var outcome = bytes.withUnsafeBytes { parser.feed($0) }
        if outcome == .needsMore { outcome = parser.endOfInput() }
        return (outcome, parser.takeResponse())
    }

    @Test("a parser started again reads each answer as a new one would, whatever the last one left in it, and keeps none of it")
    func restarted() {
        let answers = (Self.framedAnswers.map(\.0) + Self.refusedAnswers.map(\.0)).map { Array($0.utf8) }
        let kept: [StaticString] = ["etag", "content-length"]
        for first in answers {
            for second in answers {
                // The first answer read whole, or cut in the middle (a call withdrawn, a failure).
                for cut in [first.count, first.count / 2] {
                    var reused = HTTPResponseParser(limits: Self.limits, keptHeaders: nil, expectsBody: true)
                    _ = first[..<cut].withUnsafeBytes { reused.feed($0) }
                    reused.restart(limits: Self.limits, keptHeaders: kept, expectsBody: true)
                    var fresh = HTTPResponseParser(limits: Self.limits, keptHeaders: kept, expectsBody: true)
                    let (reusedOutcome, reusedAnswer) = Self.read(second, with: &reused)
                    let (freshOutcome, freshAnswer) = Self.read(second, with: &fresh)
                    #expect(reusedOutcome == freshOutcome)
                    #expect(reusedAnswer.status == freshAnswer.status && reusedAnswer.body == freshAnswer.body)
                    #expect(reusedAnswer.headers.map(\.name) == freshAnswer.headers.map(\.name))
                    #expect(reusedAnswer.headers.map(\.value) == freshAnswer.headers.map(\.value))
                    #expect(reused.keepsAlive == fresh.keepsAlive)
                    #expect(reused.body.isEmpty && reused.headers.isEmpty, "the answer was taken out, not kept")
                }
            }
        }
    }

    @Test("204, 304 and the answer to HEAD have no body, whatever their Content-Length says")
    func answersWithoutBody() throws {
        let noContent = "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n"
        #expect(try Self.parse(noContent + "abc").get() == Parsed(status: 204, body: "", keepsAlive: true, end: noContent.utf8.count))
        let notModified = "HTTP/1.1 304 Not Modified\r\nContent-Length: 3\r\n\r\n"
        #expect(try Self.parse(notModified).get() == Parsed(status: 304, body: "", keepsAlive: true, end: notModified.utf8.count))
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
        #expect(try Self.parse(head, expectsBody: false).get() == Parsed(status: 200, body: "", keepsAlive: true, end: head.utf8.count))
    }

    @Test("interim 1xx answers are skipped; the final answer is the caller's")
    func interimAnswers() throws {
        let parsed = try Self.parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx").get()
        #expect(parsed.status == 200 && parsed.body == "x")
    }

    @Test("a response framed both ways is read by its chunks and ends the connection's reuse")
    func bothFramings() throws {
        let parsed = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n").get()
        #expect(parsed.body == "abc")
        #expect(!parsed.keepsAlive)
    }

    @Test("headers are kept, trimmed, in order, only when asked")
    func keptHeaders() throws {
        var parser = HTTPResponseParser(limits: Self.limits, keepsHeaders: true, expectsBody: true)
        let outcome = Array("HTTP/1.1 200 OK\r\nETag:  \"x\" \r\nCache-Control: max-age=5\r\nContent-Length: 0\r\n\r\n".utf8)
            .withUnsafeBytes { parser.feed($0) }
        #expect(outcome == .complete(consumed: 77))
        #expect(parser.headers.map(\.name) == ["ETag", "Cache-Control", "Content-Length"])
        #expect(parser.headers.map(\.value) == ["\"x\"", "max-age=5", "0"])
        var plain = HTTPResponseParser(limits: Self.limits, keepsHeaders: false, expectsBody: true)
        _ = Array("HTTP/1.1 200 OK\r\nETag: \"x\"\r\nContent-Length: 0\r\n\r\n".utf8).withUnsafeBytes { plain.feed($0) }
        #expect(plain.headers.isEmpty)
    }

    static let refusedAnswers: [(String, UpstreamError.Kind)] = [
        ("HELLO\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 20 OK\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 099 Low\r\n\r\n", .invalidResponse),
        ("HTTP/2.0 200 OK\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 101 Switching Protocols\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nX: a\u{1}b\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1e3\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", .invalidResponse),
        ("HTTP/1.1 200 OK\r\nContent-Length: 65\r\n\r\n", .responseTooLarge),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + thirtyTwoBytes + "\r\n21\r\n", .responseTooLarge),
        ("HTTP/1.1 200 OK\r\n\r\n" + sixtyFiveBytes, .responseTooLarge),
        ("HTTP/1.1 200 OK\r\nX: " + threeHundredBytes + "\r\n\r\n", .responseTooLarge),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", .connectionFailed),
        ("HTTP/1.1 200 OK\r\nContent-Le", .connectionFailed),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", .connectionFailed),
        ("", .connectionFailed),
    ]
    static let thirtyTwoBytes = String(repeating: "x", count: 32)
    static let sixtyFiveBytes = String(repeating: "x", count: 65)
    static let threeHundredBytes = String(repeating: "x", count: 300)

    @Test("malformed or hostile answers fail with the kind that says why", arguments: refusedAnswers)
    func refused(response: String, kind: UpstreamError.Kind) {
        guard case .failure(let failure) = Self.parse(response) else {
            Issue.record("accepted: \(response.debugDescription)")
            return
        }
        #expect(failure.kind == kind, "\(failure.detail)")
    }

    /// The header-line rule as RFC 9112 words it, byte by byte: the line up to its LF without
    /// one CR before it; a colon after a name of token bytes; a value, trimmed, without a
    /// control byte other than a tab.
    static func headerLineIsValid(_ line: [UInt8]) -> Bool {
        var line = line
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              line[..<colon].allSatisfy(WireSyntaxTests.tchars.contains) else { return false }
        return !line[(colon + 1)...].contains(where: WireSyntaxTests.isForbiddenInValue)
    }

    @Test("each of the 256 bytes, anywhere in a header line, is accepted or refused as the plain rule says")
    func headerLineBytes() {
        let line = Array("X-Name: some value, then more\r".utf8)
        for position in [0, 1, 5, 6, 7, 8, 14, 15, 16, 28, 29] {
            // LF alone splits the line in two, so it is another test's matter.
            for byte in UInt8.min...UInt8.max where byte != UInt8(ascii: "\n") {
                var bytes = line
                bytes[position] = byte
                let response = Array("HTTP/1.1 200 OK\r\n".utf8) + bytes + Array("\nContent-Length: 0\r\n\r\n".utf8)
                let accepted: Bool
                switch Self.parse(String(decoding: response, as: UTF8.self)) {
                case .success(let parsed): accepted = parsed.status == 200
                case .failure(let failure): accepted = false; #expect(failure.kind == .invalidResponse)
                }
                // The String round trip repairs a lone byte over 0x7F: the rule judges what was fed.
                let fed = Array(String(decoding: response, as: UTF8.self).utf8)
                let fedLine = Array(fed[17..<(fed.count - 22)])
                if accepted != Self.headerLineIsValid(fedLine) {
                    Issue.record("byte \(byte) at \(position): \(accepted ? "accepted" : "refused") \(fedLine)")
                }
            }
        }
    }

    /// RFC 9112's status line, spelled out: `HTTP/1.` and a digit, a space, three digits
    /// (100 and up), then nothing or a space and a reason without control bytes but tabs.
    static func statusLineIsValid(_ bytes: [UInt8]) -> Bool {
        let line = bytes.last == UInt8(ascii: "\r") ? Array(bytes.dropLast()) : bytes
        func isDigit(_ index: Int) -> Bool { line[index] >= UInt8(ascii: "0") && line[index] <= UInt8(ascii: "9") }
        guard line.count >= 12, Array(line[..<7]) == Array("HTTP/1.".utf8), isDigit(7), line[8] == UInt8(ascii: " "),
              isDigit(9), isDigit(10), isDigit(11), line.count == 12 || line[12] == UInt8(ascii: " "),
              line[9] >= UInt8(ascii: "1") else { return false }
        return !line[12...].contains(where: WireSyntaxTests.isForbiddenInValue)
    }

    /// The bytes as they are (no String round trip), whole and one at a time.
    @Test("each of the 256 bytes, anywhere in the status line, is accepted or refused as the plain rule says")
    func statusLineBytes() {
        let line = Array("HTTP/1.1 200 OK\r".utf8)
        for position in line.indices {
            // LF alone ends the line there, so it is another test's matter.
            for byte in UInt8.min...UInt8.max where byte != UInt8(ascii: "\n") {
                var bytes = line
                bytes[position] = byte
                let response = bytes + Array("\nContent-Length: 0\r\n\r\n".utf8)
                let status = Int(String(decoding: bytes[9..<12], as: UTF8.self)) ?? 0
                let expected: HTTPResponseParser.Outcome
                if !Self.statusLineIsValid(bytes) {
                    expected = .failed(.invalidResponse, "malformed status line")
                } else if status == 101 {
                    expected = .failed(.invalidResponse, "an unrequested protocol switch (101)")
                } else if status < 200 {
                    expected = .needsMore  // an interim answer: the final one is still to come
                } else {
                    expected = .complete(consumed: response.count)
                }
                for pieceSize in [response.count, 1] {
                    var parser = HTTPResponseParser(limits: Self.limits, keepsHeaders: false, expectsBody: true)
                    var outcome = HTTPResponseParser.Outcome.needsMore
                    var offset = 0
                    while offset < response.count, outcome == .needsMore {
                        let end = min(response.count, offset + pieceSize)
                        outcome = response[offset..<end].withUnsafeBytes { parser.feed($0) }
                        if case .complete(let consumed) = outcome { outcome = .complete(consumed: offset + consumed) }
                        offset = end
                    }
                    if outcome != expected {
                        Issue.record("byte \(byte) at \(position), pieces of \(pieceSize): \(outcome), not \(expected)")
                    }
                }
            }
        }
    }

    @Test("a header line is refused for a CR inside it, a control byte after the first word of its value, or no line end before the head's")
    func headerLineEdges() {
        let refused = [
            "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\r\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: 0123456789abcdef\u{7F}\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: 0123456789abcdef\t\u{0}\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX:\u{1B}\r\n\r\n",
            "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
            "HTTP/1.1 200 OK\u{1}\r\n\r\n",
        ]
        for response in refused {
            guard case .failure(let failure) = Self.parse(response) else {
                Issue.record("accepted: \(response.debugDescription)")
                continue
            }
            #expect(failure.kind == .invalidResponse, "\(response.debugDescription)")
        }
        let tabs = "HTTP/1.1 200 OK\r\nX:\t\ta\tb\t0123456789\t\r\nContent-Length: 0\r\n\r\n"
        #expect(Self.parse(tabs) == .success(Parsed(status: 200, body: "", keepsAlive: true, end: tabs.utf8.count)))
        var parser = HTTPResponseParser(limits: Self.limits, keepsHeaders: true, expectsBody: true)
        _ = Array(tabs.utf8).withUnsafeBytes { parser.feed($0) }
        #expect(parser.headers.first?.value == "a\tb\t0123456789")
    }

    @Test("a chunk-size line is bounded: a longer one fails before its end arrives")
    func boundedChunkSizeLine() {
        var parser = HTTPResponseParser(limits: Self.limits, keepsHeaders: false, expectsBody: true)
        let head = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        #expect(head.withUnsafeBytes { parser.feed($0) } == .needsMore)
        let zeros = [UInt8](repeating: UInt8(ascii: "0"), count: HTTPResponseParser.maxChunkSizeLine)
        #expect(zeros.withUnsafeBytes { parser.feed($0) } == .needsMore)
        guard case .failed(let kind, let detail) = zeros.withUnsafeBytes({ parser.feed($0) }) else {
            Issue.record("a chunk-size line of \(2 * zeros.count) bytes was accepted")
            return
        }
        #expect(kind == .invalidResponse)
        #expect(detail.contains("chunk-size line"))
    }
}
