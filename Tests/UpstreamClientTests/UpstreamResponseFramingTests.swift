import HTTPCore
import UpstreamClient
import Testing
import TributaryTesting

/// How the upstream client reads HTTP/1.1 responses (RFC 9112), pinned through its public
/// API against upstreams that send exact bytes over real loopback sockets: message framing,
/// answers that arrive in pieces, interim 1xx answers, keep-alive, broken and hostile answers
/// (each fails its call with the right kind, its connection is never reused, and the next
/// call on the same client succeeds), and what the request looks like on the wire.
///
/// Written for any correct client. They were written against evhttp's client, which got
/// five of these cases wrong (chunk extensions, 1xx other than 100, an HTTP/1.0 answer's
/// keep-alive, status and Content-Length checks, malformed chunk sizes); plain-HTTP origins
/// now use ``SocketConnection``, which passes them all.
@Suite("Upstream client: reading HTTP/1.1 responses")
struct UpstreamResponseFramingTests {
    typealias Harness = UpstreamClientTests.Harness
    typealias Outcome = UpstreamClientTests.Outcome

    // MARK: - Framing

    @Test("a Content-Length or chunked body is read whole, and its connection carries the next call", arguments: [
        DelimitedAnswer("Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", body: "hello world"),
        DelimitedAnswer("chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", body: "hello world"),
        DelimitedAnswer(
            "chunked, upper- and lower-case hex",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n1a\r\nABCDEFGHIJKLMNOPQRSTUVWXYZ\r\n0\r\n\r\n",
            body: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
        DelimitedAnswer(
            "chunked, with trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: 42\r\nX-Other: y\r\n\r\n",
            body: "hello"),
    ])
    func delimitedBody(answer: DelimitedAnswer) async throws {
        try await expectReadWholeAndReused(answer)
    }

    @Test(
        "a chunked body with chunk extensions is read whole, and its connection carries the next call")
    func chunkExtensions() async throws {
        try await expectReadWholeAndReused(DelimitedAnswer(
            "chunk extensions",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n6;name;q=\"x y\"\r\n world\r\n0;last\r\n\r\n",
            body: "hello world"))
    }

    @Test("a body delimited by the connection's close is read whole, and the next call goes on a new connection", arguments: [
        "HTTP/1.1", "HTTP/1.0",
    ])
    func closeDelimitedBody(version: String) async throws {
        // Larger than a socket read, so it arrives in several.
        let body = String((0..<100_000).map { Character(Unicode.Scalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        let upstream = try RawUpstream.start { _ in
            .sendAndClose(bytes("\(version) 200 OK\r\nContent-Type: text/plain\r\n\r\n\(body)"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response?.status == 200)
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == body, "call \(id) read the whole body")
        }
        #expect(upstream.requests.value.map(\.connection) == [0, 1])
        await harness.stop()
    }

    @Test("a 204 or a 304 has no body whatever its Content-Length says, and its connection carries the next call", arguments: [
        "204 No Content", "304 Not Modified",
    ])
    func noBodyStatus(status: String) async throws {
        let upstream = try RawUpstream.start { _ in .send(bytes("HTTP/1.1 \(status)\r\nContent-Length: 5\r\n\r\n")) }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response?.status == Int(status.prefix(3)))
            #expect(response?.body == [])
        }
        #expect(upstream.requests.value.map(\.connection) == [0, 0])
        await harness.stop()
    }

    @Test("the answer to HEAD has no body although its Content-Length says 5, and its connection carries the next call")
    func headAnswer() async throws {
        let upstream = try RawUpstream.start { request in
            request.head.hasPrefix("HEAD ")
                ? .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"))
                : .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        let head = try success(await call(harness, 1, UpstreamRequest(base: base, method: .head, path: "/head")))
        #expect(head?.status == 200)
        #expect(head?.body == [])
        let get = try success(await call(harness, 2, UpstreamRequest(base: base, path: "/get")))
        #expect(get.map { String(decoding: $0.body, as: UTF8.self) } == "hello")
        #expect(upstream.requests.value.map(\.connection) == [0, 0])
        await harness.stop()
    }

    // MARK: - Answers in pieces

    @Test("an answer arriving in pieces is read whole", arguments: PiecewiseAnswer.all)
    func answerInPieces(answer: PiecewiseAnswer) async throws {
        let upstream = try RawUpstream.start { _ in .sendInPieces(answer.pieces) }
        defer { upstream.stop() }
        let harness = try await Harness()
        let response = try success(await call(harness, 1, UpstreamRequest(base: BaseURL(upstream.baseURL), path: "/pieces")))
        #expect(response?.status == 200)
        #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == answer.body)
        await harness.stop()
    }

    // MARK: - Interim answers

    @Test("interim 100 Continue answers are skipped: the caller gets the final answer", arguments: [
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n",
    ])
    func continueIsSkipped(interim: String) async throws {
        try await expectInterimSkipped(interim)
    }

    @Test(
        "interim answers other than 100 (102 Processing, 103 Early Hints) are skipped: the caller gets the final answer",
        arguments: [
            "HTTP/1.1 102 Processing\r\n\r\n",
            "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n",
        ])
    func otherInterimAnswersAreSkipped(interim: String) async throws {
        try await expectInterimSkipped(interim)
    }

    // MARK: - Keep-alive

    @Test("an answer with Connection: close is its connection's last: the next call goes on a new connection", arguments: [
        "close", "Close",
    ])
    func connectionClose(option: String) async throws {
        // The upstream keeps the socket open: the client must close it by itself.
        let upstream = try RawUpstream.start { _ in
            .send(bytes("HTTP/1.1 200 OK\r\nConnection: \(option)\r\nContent-Length: 2\r\n\r\nok"))
        }
        defer { upstream.stop() }
        try await expectTwoCallsOnTwoConnections(upstream)
    }

    @Test(
        "an HTTP/1.0 answer without keep-alive, or a close among other connection options, is its connection's last",
        arguments: [
            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 2\r\n\r\nok",
        ])
    func otherLastAnswers(answer: String) async throws {
        let upstream = try RawUpstream.start { _ in .send(bytes(answer)) }
        defer { upstream.stop() }
        try await expectTwoCallsOnTwoConnections(upstream)
    }

    @Test("an HTTP/1.0 answer with Connection: keep-alive and Content-Length is read, and so is the next one")
    func http10KeepAlive() async throws {
        let upstream = try RawUpstream.start { _ in
            .send(bytes("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == "ok")
        }
        await harness.stop()
    }

    @Test("a reused connection that closes before answering: a GET goes again, once, on a new connection; a POST fails", arguments: [
        (HTTPMethod.get, true), (.post, false),
    ])
    func reusedConnectionLostBeforeTheAnswer(method: HTTPMethod, goesAgain: Bool) async throws {
        // The keep-alive race made deterministic: the upstream takes the second request on the
        // first connection and closes it without a byte of answer.
        let upstream = try RawUpstream.start { request in
            request.connection == 0 && request.head.contains(" /second ")
                ? .sendAndClose([])
                : .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        #expect(try success(await call(harness, 1, UpstreamRequest(base: base, path: "/first")))?.status == 200)
        let second = try await call(harness, 2, UpstreamRequest(base: base, method: method, path: "/second"))
        if goesAgain {
            #expect(success(second)?.status == 200)
            #expect(upstream.requests.value.map(\.connection) == [0, 0, 1])
        } else {
            guard case .failure(let error) = second else {
                Issue.record("a POST went again: \(second)")
                return
            }
            #expect(error.kind == .connectionFailed)
            #expect(upstream.requests.value.map(\.connection) == [0, 0])
        }
        await harness.stop()
    }

    @Test("an upstream that closes an idle keep-alive connection: the next call succeeds on a new connection")
    func idleConnectionClosedByUpstream() async throws {
        let upstream = try RawUpstream.start { _ in .sendAndClose(bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        #expect(try success(await call(harness, 1, UpstreamRequest(base: base, path: "/1")))?.status == 200)
        // The close is on the wire (the upstream closed after answering), and one loop turn
        // has passed since: the client had the chance to see it while the connection idled.
        #expect(await upstream.closed.wait(timeout: .seconds(5)) { $0 == [0] })
        try await harness.thread.run { _ in }
        #expect(try success(await call(harness, 2, UpstreamRequest(base: base, path: "/2")))?.status == 200)
        #expect(upstream.requests.value.map(\.connection) == [0, 1])
        await harness.stop()
    }

    // MARK: - Broken and hostile answers

    @Test("a malformed head (status line, status code, header line, Content-Length) fails the call with invalid_response", arguments: [
        "HELLO\r\n\r\n",
        "HTTP/1.1 abc Letters\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 099 Too Low\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 1000 Too High\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 2x0 Mixed\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200x OK\r\nContent-Length: 2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nno colon here\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!",
    ])
    func malformedHead(answer: String) async throws {
        try await expectFailureThenRecovery(from: .send(bytes(answer)), kinds: [.invalidResponse])
    }

    @Test(
        "a chunk size that is not hex (with a sign, a 0x prefix, a letter past F) fails the call with invalid_response",
        arguments: ["zz", "-5", "5x", "+5", "0x5"])
    func chunkSizeNotHexIsInvalid(size: String) async throws {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n"
        try await expectFailureThenRecovery(from: .send(bytes(answer)), kinds: [.invalidResponse])
    }

    /// RFC 9112 (7.1) asks that a recipient not be fooled by an overflow: 2^64 must not wrap
    /// to a last chunk of size 0. (evhttp's strtoll clamped it to 2^63-1: response_too_large.)
    @Test("a chunk size that overflows 64 bits fails the call with invalid_response", arguments: ["FFFFFFFFFFFFFFFFF", "10000000000000000"])
    func chunkSizeOverflow(size: String) async throws {
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n"
        try await expectFailureThenRecovery(from: .send(bytes(answer)), kinds: [.invalidResponse])
    }

    /// response_too_large ("response head exceeds … bytes"); evhttp said invalid_response.
    @Test("a head longer than the client's maxResponseHeaderBytes fails the call")
    func headTooLong() async throws {
        let headers = (0..<100).map { "X-Filler-\($0): \(String(repeating: "h", count: 100))\r\n" }.joined()
        try await expectFailureThenRecovery(
            from: .send(bytes("HTTP/1.1 200 OK\r\n\(headers)Content-Length: 2\r\n\r\nok")), kinds: [.responseTooLarge, .invalidResponse],
            client: .init(maxResponseHeaderBytes: 4 * 1024))
    }

    @Test("a Content-Length over the request's maxResponseBytes fails the call with response_too_large, without reading the body")
    func contentLengthOverLimit() async throws {
        let flood = 64 * 1024 * 1024
        let upstream = try hostileUpstream(.flood(
            prefix: bytes("HTTP/1.1 200 OK\r\nContent-Length: \(flood)\r\n\r\n"), filler: UInt8(ascii: "x"), limit: flood))
        defer { upstream.stop() }
        try await expectFailureThenRecovery(on: upstream, kinds: [.responseTooLarge], maxResponseBytes: 1024 * 1024)
        #expect(await upstream.floods.wait(timeout: .seconds(10)) { $0.count == 1 })
        #expect(upstream.floods.value.first.map { $0 < 8 * 1024 * 1024 } == true, "the client closed after at most a few socket buffers")
    }

    @Test("a chunked body larger in total than the request's maxResponseBytes fails the call with response_too_large")
    func chunkedOverLimit() async throws {
        let chunk = "3E8\r\n\(String(repeating: "c", count: 1000))\r\n"
        let answer = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(String(repeating: chunk, count: 10))0\r\n\r\n"
        try await expectFailureThenRecovery(from: .send(bytes(answer)), kinds: [.responseTooLarge], maxResponseBytes: 4096)
    }

    /// connection_failed in each case (retryable: the upstream may answer on a new connection).
    @Test("a connection that closes before the answer is complete fails the call with connection_failed", arguments: [
        "HTTP/1.1 200 OK\r\nContent-Len",
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
    ])
    func closedMidAnswer(answer: String) async throws {
        let failure = try await expectFailureThenRecovery(from: .sendAndClose(bytes(answer)), kinds: [.connectionFailed])
        #expect(failure?.isRetryable == true)
    }

    // MARK: - The request on the wire

    @Test("the request line is 'GET <path> HTTP/1.1', Host carries host:port, and the caller's headers go in order")
    func requestHead() async throws {
        let upstream = try RawUpstream.start { _ in .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")) }
        defer { upstream.stop() }
        let harness = try await Harness()
        let headers = [("X-First", "1"), ("X-Second", "two"), ("X-Third", "3")]
        let request = UpstreamRequest(base: try BaseURL(upstream.baseURL + "/api"), path: "/items/a%2Fb?x=1&y=2", headers: headers)
        #expect(try success(await call(harness, 1, request))?.status == 200)
        let lines = try #require(upstream.requests.value.first).head.components(separatedBy: "\r\n")
        #expect(lines.first == "GET /api/items/a%2Fb?x=1&y=2 HTTP/1.1")
        #expect(lines.filter { $0.lowercased().hasPrefix("host:") } == ["Host: 127.0.0.1:\(upstream.port)"])
        let custom = lines.filter { $0.hasPrefix("X-") }
        #expect(custom == ["X-First: 1", "X-Second: two", "X-Third: 3"])
        await harness.stop()
    }

    /// Such a header is left out and the others are sent (``RequestHead``), as evhttp did;
    /// checked on the call or once before (``CheckedHeaders``, a caller's forwarded headers).
    @Test("a header with CR or LF in its name or value never becomes a header line of its own, nor a folded one", arguments: [
        Injection(name: "X-Note", value: "a\r\nInjected: yes"),
        Injection(name: "X-Note", value: "a\nInjected: yes"),
        Injection(name: "X-Note", value: "a\rInjected: yes"),
        Injection(name: "X-Note", value: "a\r\n\r\nGET /smuggled HTTP/1.1\r\nInjected: yes"),
        Injection(name: "X-Note\r\nInjected", value: "yes"),
        Injection(name: "X-Note", value: "a\r\n Injected: yes"),
        Injection(name: "X-Note", value: "a\r\n\tInjected: yes"),
    ], [false, true])
    func headerInjection(injection: Injection, checkedOnce: Bool) async throws {
        let upstream = try RawUpstream.start { _ in .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")) }
        defer { upstream.stop() }
        let harness = try await Harness()
        let fields = [("X-Before", "1"), (injection.name, injection.value), ("X-After", "2")]
        let request = checkedOnce
            ? UpstreamRequest(base: try BaseURL(upstream.baseURL), path: "/inject", checkedHeaders: CheckedHeaders(fields))
            : UpstreamRequest(base: try BaseURL(upstream.baseURL), path: "/inject", headers: fields)
        let outcome = try await call(harness, 1, request)
        // A request smuggled behind the first would be read by the upstream before anything
        // the client sends next: a second call makes it show.
        let after = UpstreamRequest(base: try BaseURL(upstream.baseURL), path: "/after")
        #expect(success(try await call(harness, 2, after))?.status == 200)
        let heads = upstream.requests.value.map(\.head)
        if case .failure = outcome {
            #expect(heads.map { $0.prefix(10) } == ["GET /after"], "a request the client refuses is not sent")
        } else {
            #expect(heads.map { $0.prefix(11) } == ["GET /inject", "GET /after "], "two requests, nothing smuggled: \(heads)")
        }
        if let head = heads.first(where: { $0.hasPrefix("GET /inject") }) {
            let lines = head.components(separatedBy: "\r\n")
            #expect(!lines.contains { $0.hasPrefix("Injected") }, "\(head.debugDescription)")
            #expect(!lines.contains { $0.hasPrefix(" ") || $0.hasPrefix("\t") }, "no folded line (RFC 9112 5.2): \(head.debugDescription)")
            #expect(!lines.contains { $0.contains("\r") || $0.contains("\n") }, "no bare CR or LF: \(head.debugDescription)")
            #expect(lines.contains("X-After: 2"), "the headers after it are sent")
        }
        await harness.stop()
    }

    @Test("an answer that comes before the request's body was all sent ends its connection: the next call goes on a new one")
    func earlyAnswerToALargeBody() async throws {
        // The upstream answers after the head and reads nothing more, so 8 MiB cannot all
        // leave the client's socket: the rest of the body must never precede another request.
        let upstream = try RawUpstream.start { request in
            request.connection == 0
                ? .sendThenHold(bytes("HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n"))
                : .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        let upload = UpstreamRequest(base: base, method: .post, path: "/upload", body: [UInt8](repeating: UInt8(ascii: "x"), count: 8 << 20))
        #expect(try success(await call(harness, 1, upload))?.status == 413)
        #expect(try success(await call(harness, 2, UpstreamRequest(base: base, path: "/next")))?.status == 200)
        // Reused, the first connection would have queued this request behind the unsent body,
        // which the upstream never reads: the call would time out instead.
        #expect(upstream.requests.value.map(\.connection) == [0, 1])
        await harness.stop()
    }

    @Test("a caller's Host, Content-Length and Transfer-Encoding are not sent: the client frames the request itself")
    func callerFramingHeadersAreLeftOut() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json("{}") }
        let harness = try await Harness()
        let body = bytes("four")
        let request = UpstreamRequest(
            base: try BaseURL(upstream.baseURL), method: .post, path: "/framed",
            headers: [("Host", "evil.example"), ("content-length", "400"), ("Transfer-Encoding", "chunked"), ("X-Kept", "yes")], body: body)
        #expect(try success(await call(harness, 1, request))?.status == 200)
        let recorded = try #require(upstream.requests.first)
        #expect(recorded.header("Host") == "127.0.0.1:\(upstream.port)")
        #expect(recorded.header("Content-Length") == "4")
        #expect(recorded.header("Transfer-Encoding") == nil)
        #expect(recorded.header("X-Kept") == "yes")
        #expect(recorded.body == body)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a POST with a body sends its Content-Length and the body")
    func postBody() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json("{}") }
        let harness = try await Harness()
        let body = bytes(#"{"name":"tributary","n":42}"#)
        let request = UpstreamRequest(
            base: try BaseURL(upstream.baseURL), method: .post, path: "/items", headers: [("Content-Type", "application/json")], body: body)
        #expect(try success(await call(harness, 1, request))?.status == 200)
        let recorded = try #require(upstream.requests.first)
        #expect(recorded.method == .post)
        #expect(recorded.header("Content-Length") == "\(body.count)")
        #expect(recorded.body == body)
        await harness.stop()
        await upstream.shutdown()
    }

    // MARK: - Arguments

    /// An answer whose body is framed by Content-Length or chunked coding.
    struct DelimitedAnswer: Sendable, CustomTestStringConvertible {
        let name: String
        let answer: String
        let body: String

        init(_ name: String, _ answer: String, body: String) {
            self.name = name
            self.answer = answer
            self.body = body
        }

        var testDescription: String { name }
    }

    /// An answer cut into the pieces the upstream writes one by one.
    struct PiecewiseAnswer: Sendable, CustomTestStringConvertible {
        let name: String
        let pieces: [[UInt8]]
        let body: String

        static let contentLength = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 11\r\n\r\nhello world"
        static let chunked =
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n6\r\n world\r\n0\r\n\r\n"
        static let chunkedBody = "abcdefghijklmnopqrstuvwxyz world"

        static let all: [PiecewiseAnswer] = [
            .init(name: "Content-Length, one byte at a time", pieces: contentLength.utf8.map { [$0] }, body: "hello world"),
            .init(name: "chunked, one byte at a time", pieces: chunked.utf8.map { [$0] }, body: chunkedBody),
            .init(name: "split inside the status line", splitting: chunked, after: ["HTTP/1.1 2"]),
            .init(name: "split inside a header", splitting: chunked, after: ["Content-Ty", "Transfer-Encoding: chun"]),
            .init(name: "split between CR and LF", splitting: chunked, after: ["200 OK\r", "text/plain\r", "chunked\r\n\r"]),
            .init(name: "split inside a chunk-size line", splitting: chunked, after: ["\r\n\r\n1", "a\r"]),
            .init(name: "split inside chunk data", splitting: chunked, after: ["abcdefghijklm", " wor"]),
            .init(name: "split inside a Content-Length body", splitting: contentLength, after: ["hel", "lo w"], body: "hello world"),
        ]

        init(name: String, pieces: [[UInt8]], body: String) {
            self.name = name
            self.pieces = pieces
            self.body = body
        }

        /// `answer` cut right after each of `marks` (each found after the previous cut), byte
        /// by byte: as Characters, "\r\n" is one and a mark could not end between them.
        init(name: String, splitting answer: String, after marks: [String], body: String = chunkedBody) {
            var rest = Array(answer.utf8)[...]
            var pieces: [[UInt8]] = []
            for mark in marks {
                let end = rest.firstRange(of: Array(mark.utf8))!.upperBound
                pieces.append(Array(rest[..<end]))
                rest = rest[end...]
            }
            pieces.append(Array(rest))
            self.init(name: name, pieces: pieces, body: body)
        }

        var testDescription: String { name }
    }

    /// A request header the caller got from elsewhere, with line breaks in it.
    struct Injection: Sendable, CustomTestStringConvertible {
        let name: String
        let value: String

        var testDescription: String { "\(name.debugDescription): \(value.debugDescription)" }
    }

    // MARK: - Helpers

    /// Two calls, each answered with `answer.answer`: both read its whole body, over one connection.
    private func expectReadWholeAndReused(_ answer: DelimitedAnswer) async throws {
        let upstream = try RawUpstream.start { _ in .send(bytes(answer.answer)) }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response?.status == 200)
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == answer.body)
        }
        #expect(upstream.requests.value.map(\.connection) == [0, 0])
        await harness.stop()
    }

    /// `interim` then a final 200: the caller gets the 200 and its body, and the connection
    /// carries the next call.
    private func expectInterimSkipped(_ interim: String) async throws {
        let upstream = try RawUpstream.start { _ in
            .send(bytes(interim + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal"))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response?.status == 200)
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == "final")
        }
        #expect(upstream.requests.value.map(\.connection) == [0, 0])
        await harness.stop()
    }

    /// Two calls to `upstream` succeed, the second on a new connection.
    private func expectTwoCallsOnTwoConnections(_ upstream: RawUpstream) async throws {
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        for id in 1...2 {
            let response = try success(await call(harness, id, UpstreamRequest(base: base, path: "/\(id)")))
            #expect(response.map { String(decoding: $0.body, as: UTF8.self) } == "ok")
        }
        #expect(upstream.requests.value.map(\.connection) == [0, 1])
        await harness.stop()
    }

    /// An upstream that answers `/hostile` with `hostile` and anything else well.
    private func hostileUpstream(_ hostile: RawUpstream.Action) throws -> RawUpstream {
        try RawUpstream.start { request in
            request.head.hasPrefix("GET /hostile ") ? hostile : .send(bytes("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nfine"))
        }
    }

    @discardableResult
    private func expectFailureThenRecovery(
        from hostile: RawUpstream.Action, kinds: Set<UpstreamError.Kind>, client configuration: UpstreamClient.Configuration = .init(),
        maxResponseBytes: Int = 8 * 1024 * 1024
    ) async throws -> UpstreamError? {
        let upstream = try hostileUpstream(hostile)
        defer { upstream.stop() }
        return try await expectFailureThenRecovery(on: upstream, kinds: kinds, client: configuration, maxResponseBytes: maxResponseBytes)
    }

    /// Calls `/hostile` on `upstream` (see ``hostileUpstream(_:)``) and expects it to fail
    /// with one of `kinds`; then calls `/after` on the same client and expects it to succeed
    /// on another connection: the broken one is not reused, and the client is not poisoned.
    @discardableResult
    private func expectFailureThenRecovery(
        on upstream: RawUpstream, kinds: Set<UpstreamError.Kind>, client configuration: UpstreamClient.Configuration = .init(),
        maxResponseBytes: Int = 8 * 1024 * 1024
    ) async throws -> UpstreamError? {
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness(configuration)
        let outcome = try await call(harness, 1, UpstreamRequest(base: base, path: "/hostile", timeout: .seconds(5), maxResponseBytes: maxResponseBytes))
        var failure: UpstreamError?
        switch outcome {
        case .success(let response):
            Issue.record("answered: \(response.status), \(response.body.count) body bytes")
        case .failure(let error):
            failure = error
            #expect(kinds.contains(error.kind), "\(error)")
        }
        let after = try success(await call(harness, 2, UpstreamRequest(base: base, path: "/after")))
        #expect(after.map { String(decoding: $0.body, as: UTF8.self) } == "fine", "the client is not poisoned")
        let requests = upstream.requests.value
        #expect(requests.count == 2 && requests[0].connection != requests[1].connection, "the broken connection is not reused")
        await harness.stop()
        return failure
    }

    /// Starts call `id` and waits for its outcome.
    private func call(_ harness: Harness, _ id: Int, _ request: UpstreamRequest) async throws -> Outcome {
        _ = try await harness.start(id, request)
        #expect(await harness.outcomes.wait(timeout: .seconds(10)) { $0[id] != nil }, "call \(id) ended")
        return try #require(harness.outcomes.value[id])
    }

    /// The response of a successful outcome; records an issue (with the failure) otherwise.
    private func success(_ outcome: Outcome) -> UpstreamResponse? {
        switch outcome {
        case .success(let response): return response
        case .failure(let error):
            Issue.record("failed: \(error)")
            return nil
        }
    }
}

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
