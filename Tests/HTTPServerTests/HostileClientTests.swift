import Foundation
import EventLoop
import HTTPServer
import Testing
import TributaryTesting

/// The HTTP server against clients that misbehave on purpose, over real sockets with raw
/// bytes (an HTTP library would refuse to send most of these): floods, endless and lenient
/// chunk-size lines, ambiguous framing headers, slowloris, HEAD on keep-alive connections,
/// half-closes.
@Suite("HTTP server: hostile clients")
struct HostileClientTests {
    /// A server that answers every request with `{"path","body"}`, after `delay`, and
    /// records what it answered.
    static func echoServer(
        delay: Duration = .zero, limits: HTTPServer.Limits = .init(), handled: Observed<[String]> = Observed([])
    ) async throws -> TestServer {
        try await TestServer.start(limits: limits) { request, loop in
            let answer = {
                handled.update { $0.append(request.path) }
                request.respond(status: 200, json: #"{"path":"\#(request.path)","body":\#(request.body.count)}"#)
            }
            guard delay > .zero else { return answer() }
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .init(delay)), answer)
        }
    }

    // MARK: - Floods

    @Test("a client that floods an open request is read at most 64 KiB ahead, and loses nothing it sent")
    func floodWhileOpen() async throws {
        let server = try await Self.echoServer(delay: .milliseconds(1500))
        let connection = try await TestConnection(port: server.port, sendBuffer: 64 * 1024)
        let pipelined = Array("POST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n".utf8) + [UInt8](repeating: 0x61, count: 10_000)
        try await connection.send("GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
        let flood = pipelined + [UInt8](repeating: 0x7A, count: 96 * 1024 * 1024)
        let sent = await connection.sendWhileTaken(flood, timeout: .milliseconds(500))
        // What went out sits in the server's 64 KiB and the two kernels' socket buffers, now
        // full: the server has stopped reading, so nothing more goes out.
        #expect(sent < 4 * 1024 * 1024, "the server kept reading: \(sent) bytes taken")
        let more = await connection.sendWhileTaken(Array(flood[sent...]), timeout: .milliseconds(300))
        #expect(more < 1024 * 1024, "the server kept reading: \(more) more bytes taken")
        #expect(try await connection.readResponse().text == #"{"path":"/first","body":0}"#)
        #expect(try await connection.readResponse().text == #"{"path":"/second","body":10000}"#)
        connection.close()
        await server.stop()
    }

    @Test("a client that floods an event stream is read at most 64 KiB ahead, and the stream goes on")
    func floodDuringStream() async throws {
        let server = try await TestServer.start { request, loop in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(600))) {
                request.write(Array("data: still here\n\n".utf8))
            }
        }
        let connection = try await TestConnection(port: server.port, sendBuffer: 64 * 1024)
        try await connection.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.readHead().status == 200)
        let flood = [UInt8](repeating: 0x7A, count: 96 * 1024 * 1024)
        let sent = await connection.sendWhileTaken(flood, timeout: .milliseconds(400))
        #expect(sent < 4 * 1024 * 1024, "the server kept reading: \(sent) bytes taken")
        let more = await connection.sendWhileTaken(Array(flood[sent...]), timeout: .milliseconds(300))
        #expect(more < 1024 * 1024, "the server kept reading: \(more) more bytes taken")
        #expect(try await connection.readChunk() == Array("data: still here\n\n".utf8))
        connection.close()
        await server.stop()
    }

    // MARK: - Chunked bodies

    @Test("an endless chunk-size line is answered 400 after its 17th digit, and the connection closed")
    func endlessChunkSizeLine() async throws {
        let handled = Observed<[String]>([])
        let server = try await Self.echoServer(handled: handled)
        let connection = try await TestConnection(port: server.port)
        try await connection.send("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        _ = await connection.sendWhileTaken([UInt8](repeating: 0x30, count: 200_000), timeout: .milliseconds(300))
        let response = try await connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection") == "close")
        #expect(response.text.contains(#""code":"malformed_request""#))
        #expect(response.text.contains("at most 16 hex digits"))
        #expect(await connection.waitForClose())
        #expect(handled.value.isEmpty)
        await server.stop()
    }

    @Test("chunk sizes a lenient parser reads as a size are refused, 400, before the handler and before a smuggled request", arguments: [
        "0x5", " 5", "+5", "5 ", "5;ext=1",
    ])
    func lenientChunkSize(size: String) async throws {
        let handled = Observed<[String]>([])
        let server = try await Self.echoServer(handled: handled)
        let connection = try await TestConnection(port: server.port)
        try await connection.send(
            "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n"
                + "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection") == "close")
        #expect(response.text.contains(#""code":"malformed_request""#))
        #expect(await connection.waitForClose())
        #expect(handled.value.isEmpty, "the handler saw \(handled.value)")
        await server.stop()
    }

    @Test("a well-formed chunked body reaches the handler whole, and the next request after it")
    func validChunkedBody() async throws {
        let server = try await Self.echoServer()
        let connection = try await TestConnection(port: server.port)
        try await connection.send(
            "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"
                + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await connection.readResponse().text == #"{"path":"/x","body":31}"#)
        #expect(try await connection.readResponse().text == #"{"path":"/next","body":0}"#)
        await server.stop()
    }

    // MARK: - Framing headers

    /// `answeredInJSON` is false where evhttp refuses the request itself (with its own HTML
    /// page: libevent 2.1 has no hook for it).
    @Test("framing that a proxy could read otherwise is answered 400 with Connection: close, and what follows is never a request", arguments: [
        ("Transfer-Encoding: gzip\r\n", true),
        ("Transfer-Encoding: gzip, chunked\r\n", true),
        ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", false),
        ("Content-Length: +5\r\n", true),
        ("Content-Length : 5\r\n", true),
        ("X-A: 1\r\n folded\r\n", true),
        ("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", false),
        ("Content-Length: 5\r\nContent-Length: 5\r\n", true),
    ])
    func ambiguousFraming(headers: String, answeredInJSON: Bool) async throws {
        let handled = Observed<[String]>([])
        let server = try await Self.echoServer(handled: handled)
        let connection = try await TestConnection(port: server.port)
        try await connection.send("POST /x HTTP/1.1\r\nHost: x\r\n\(headers)\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.status == 400)
        #expect(response.header("Connection") == "close")
        if answeredInJSON { #expect(response.text.contains(#""code":"malformed_request""#)) }
        #expect(await connection.waitForClose())
        #expect(handled.value.isEmpty, "the handler saw \(handled.value)")
        await server.stop()
    }

    @Test("a body on HEAD, or Transfer-Encoding from an HTTP/1.0 client, is refused the same way", arguments: [
        "HEAD /x HTTP/1.1\r\nHost: x\r\nContent-Length: 30\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n\r\n",
        "POST /x HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    ])
    func bodiesEvhttpWouldLeaveUnread(request: String) async throws {
        let handled = Observed<[String]>([])
        let server = try await Self.echoServer(handled: handled)
        let connection = try await TestConnection(port: server.port)
        try await connection.send(request)
        let response = try await connection.readResponse(method: request.hasPrefix("HEAD") ? "HEAD" : "GET")
        #expect(response.status == 400)
        #expect(await connection.waitForClose())
        #expect(handled.value.isEmpty)
        await server.stop()
    }

    // MARK: - Time and connection limits

    /// Sends `text` one byte every 100 ms, as a slowloris client does, until the server closes
    /// the connection: how many bytes went out before it did, or nil if all of them did. The
    /// count, not the time it took, says whether the close came at the deadline: a loaded
    /// run that stalls this task stalls its trickle too.
    static func trickle(_ text: String, on connection: TestConnection) async -> Int? {
        var sent = 0
        for byte in text.utf8 {
            guard await connection.sendWhileTaken([byte], timeout: .milliseconds(100)) == 1 else { return sent }
            sent += 1
            if await connection.waitForClose(within: .milliseconds(100)) { return sent }
        }
        return nil
    }

    /// Trickles a next request on `connection`, which a 400 ms deadline must cut off after a
    /// few of its 133 bytes.
    static func expectNextRequestCutOff(on connection: TestConnection) async {
        let started = ContinuousClock.now
        let text = "GET /second HTTP/1.1\r\nHost: x\r\nX-Slow: " + String(repeating: "a", count: 100)
        let sent = await trickle(text, on: connection)
        #expect(sent != nil, "still open after \(ContinuousClock.now - started)")
        #expect((sent ?? .max) < text.utf8.count / 4, "closed after \(sent.map(String.init) ?? "all") bytes: about when the 400 ms ran out, not at the end of the trickle")
    }

    @Test("a request must arrive whole within the timeout: one byte now and then does not hold a connection")
    func slowloris() async throws {
        let server = try await Self.echoServer(limits: .init(timeout: .milliseconds(400)))
        let connection = try await TestConnection(port: server.port)
        let opened = ContinuousClock.now
        // The whole trickle is 133 bytes, over 13 s; the 400 ms run out after 2 to 4 of them.
        let text = "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + String(repeating: "a", count: 100)
        let sent = await Self.trickle(text, on: connection)
        #expect(sent != nil, "still open after \(ContinuousClock.now - opened)")
        #expect(ContinuousClock.now - opened >= .milliseconds(380))
        #expect((sent ?? .max) < text.utf8.count / 4, "closed after \(sent.map(String.init) ?? "all") bytes: about when the 400 ms ran out, not at the end of the trickle")
        await server.stop()
    }

    @Test("the deadline starts again after each answer: a second request trickled byte by byte is cut off too")
    func slowlorisAfterAnAnswer() async throws {
        let server = try await Self.echoServer(limits: .init(timeout: .milliseconds(400)))
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/first")
        #expect(try await connection.readResponse().status == 200)
        await Self.expectNextRequestCutOff(on: connection)
        await server.stop()
    }

    /// A stream lets its deadline timer go while it is open (it may be open for hours); the
    /// next request on the connection must get one again.
    @Test("the deadline starts again after a stream ends: a request trickled after it is cut off too")
    func slowlorisAfterAStream() async throws {
        let server = try await TestServer.start(limits: .init(timeout: .milliseconds(400))) { request, _ in
            request.startStream(status: 200, headers: [])
            request.write(Array("data: 1\n\n".utf8))
            request.endStream()
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/stream")
        #expect(try await connection.readHead().status == 200)
        while try await connection.readChunk() != nil {}
        await Self.expectNextRequestCutOff(on: connection)
        await server.stop()
    }

    @Test("a connection that sends nothing, or idles after an answer, is closed when the deadline passes")
    func idleConnections() async throws {
        let server = try await Self.echoServer(limits: .init(timeout: .milliseconds(300)))
        let silent = try await TestConnection(port: server.port)
        let idle = try await TestConnection(port: server.port)
        try await idle.sendRequest("GET", "/once")
        #expect(try await idle.readResponse().status == 200)
        #expect(await silent.waitForClose())
        #expect(await idle.waitForClose())
        await server.stop()
    }

    @Test("connections count from their accept: quiet connections fill maxConnections, the next is answered 503")
    func connectionsCountFromAccept() async throws {
        let server = try await Self.echoServer(limits: .init(timeout: .seconds(10), maxConnections: 2))
        let open = Observed(0)
        try await server.run { $0.onConnectionCountChange = { count in open.update { $0 = count } } }
        var quiet: [TestConnection] = []
        for _ in 0..<2 { quiet.append(try await TestConnection(port: server.port)) }
        #expect(await open.wait(timeout: .seconds(5)) { $0 == 2 })
        let third = try await TestHTTP.get(port: server.port, "/third")
        #expect(third.status == 503)
        #expect(third.text.contains("too_many_connections"))
        for connection in quiet { connection.close() }
        #expect(await open.wait(timeout: .seconds(5)) { $0 == 0 })
        #expect(try await TestHTTP.get(port: server.port, "/again").status == 200)
        await server.stop()
    }

    // MARK: - HEAD, HTTP/1.0, half-close

    @Test("HEAD answers carry the GET's Content-Length and no body: the next answer on the connection is intact")
    func headOnKeepAlive() async throws {
        let server = try await Self.echoServer()
        let connection = try await TestConnection(port: server.port)
        try await connection.send("HEAD /groups HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try await connection.readResponse(method: "HEAD")
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(#"{"path":"/groups","body":0}"#.utf8.count))
        #expect(try await connection.readResponse().text == #"{"path":"/healthz","body":0}"#)
        await server.stop()
    }

    @Test("HEAD on a stream answers the stream's headers and ends: nothing stays open")
    func headOnStream() async throws {
        let states = Observed<[ServerRequest.State]>([])
        let server = try await TestServer.start { request, _ in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            request.write(Array("data: x\n\n".utf8))
            states.update { $0.append(request.state) }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.send("HEAD /events HTTP/1.1\r\nHost: x\r\n\r\nHEAD /events HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in 0..<2 {
            let head = try await connection.readResponse(method: "HEAD")
            #expect(head.header("Content-Type") == "text/event-stream")
            #expect(head.header("Transfer-Encoding") == nil)
        }
        // The handler records its request's state after the answer left: awaited, not read.
        #expect(await states.wait(timeout: .seconds(5)) { $0 == [.finished, .finished] })
        await server.stop()
    }

    @Test("an HTTP/1.0 client asking for keep-alive gets its stream unframed, without Content-Length: 0, then the close")
    func http10Stream() async throws {
        let server = try await TestServer.start { request, _ in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            request.write(Array("data: one\n\n".utf8))
            request.endStream()
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.send("GET /events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let response = try await connection.readResponse()
        #expect(response.status == 200)
        #expect(response.header("Content-Length") == nil)
        #expect(response.header("Transfer-Encoding") == nil)
        #expect(response.text == "data: one\n\n")
        #expect(connection.peerClosed)
        await server.stop()
    }

    @Test("a client that half-closes after its request still gets the answer", arguments: ["1.1", "1.0"])
    func halfCloseGetsTheAnswer(version: String) async throws {
        let disconnects = Observed(0)
        let server = try await TestServer.start { request, loop in
            request.onDisconnect = { disconnects.update { $0 += 1 } }
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(200))) {
                request.respond(status: 200, json: #"{"late":true}"#)
            }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.send("GET /slow HTTP/\(version)\r\nHost: x\r\n\r\n")
        connection.finishSending()
        let response = try await connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == #"{"late":true}"#)
        #expect(disconnects.value == 0)
        await server.stop()
    }

    @Test("a half-closed event stream goes on when it has a liveness probe; a client that closes is still noticed at once")
    func halfClosedStream() async throws {
        let disconnects = Observed(0)
        let streams = Observed<[LoopBound<ServerRequest>]>([])
        let server = try await TestServer.start { request, loop in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            request.livenessProbe = Array(": probe\n\n".utf8)
            request.onDisconnect = { disconnects.update { $0 += 1 } }
            streams.update { $0.append(LoopBound(request, loop: loop)) }
        }
        let halfClosed = try await TestConnection(port: server.port)
        try await halfClosed.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await halfClosed.readHead().status == 200)
        halfClosed.finishSending()
        #expect(try await halfClosed.readChunk() == Array(": probe\n\n".utf8))
        try await server.thread.run { _ in streams.value[0].value.write(Array("data: later\n\n".utf8)) }
        #expect(try await halfClosed.readChunk() == Array("data: later\n\n".utf8))
        #expect(disconnects.value == 0)
        let gone = try await TestConnection(port: server.port)
        try await gone.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await gone.readHead().status == 200)
        let closedAt = ContinuousClock.now
        gone.close()
        // Nothing is written to the stream after the close: without the reset watch the client's
        // leaving would never be noticed. The bound only has to hold on a loaded machine (a
        // full parallel run once took 2.07 s).
        #expect(await disconnects.wait(timeout: .seconds(10)) { $0 == 1 })
        #expect(ContinuousClock.now - closedAt < .seconds(10), "noticed without any write to the stream")
        try await server.thread.run { _ in for stream in streams.value { stream.release() } }
        await server.stop()
    }

    @Test("a request's peer is nil once its client is gone, never a read of the freed connection")
    func peerAfterDisconnect() async throws {
        let peers = Observed<[String]>([])
        let server = try await TestServer.start { request, _ in
            peers.update { $0.append(request.peer.map { "\($0.host)" } ?? "none") }
            request.onDisconnect = { peers.update { $0.append(request.peer.map { "\($0.host)" } ?? "none") } }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/pending")
        #expect(await peers.wait(timeout: .seconds(10)) { $0.count == 1 })
        connection.reset()
        #expect(await peers.wait(timeout: .seconds(10)) { $0.count == 2 })
        #expect(peers.value == ["127.0.0.1", "none"])
        await server.stop()
    }

    @Test("clients that close around the moment their answer goes out, 400 times, leave a server that still answers")
    func closeRacesTheAnswer() async throws {
        let server = try await TestServer.start { request, loop in
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .microseconds(Int.random(in: 0...3000)))) {
                request.respond(status: 200, json: #"{"ok":true}"#)
            }
        }
        for _ in 0..<20 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let connection = try await TestConnection(port: server.port)
                        try await connection.sendRequest("GET", "/race")
                        // The jitter is the test: the close lands before, during or after the answer.
                        try await Task.sleep(for: .microseconds(Int.random(in: 0...3000)))
                        if index.isMultiple(of: 2) { connection.reset() } else { connection.close() }
                    }
                }
                try await group.waitForAll()
            }
        }
        #expect(try await TestHTTP.get(port: server.port, "/after").text == #"{"ok":true}"#)
        await server.stop()
    }

    // MARK: - Shutdown

    @Test("a stream that began before stopAccepting and ends during the drain closes its connection after its last chunk")
    func streamEndingDuringDrain() async throws {
        let streams = Observed<[LoopBound<ServerRequest>]>([])
        let server = try await TestServer.start { request, loop in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            streams.update { $0.append(LoopBound(request, loop: loop)) }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/events")
        let head = try await connection.readHead()
        #expect(head.status == 200)
        #expect(head.header("Connection") == nil, "keep-alive when it began")
        #expect(await streams.wait(timeout: .seconds(10)) { $0.count == 1 })
        try await server.run { $0.stopAccepting() }
        try await server.thread.run { _ in
            streams.value[0].value.endStream()
            streams.value[0].release()
        }
        #expect(try await connection.readChunk() == nil)
        #expect(await connection.waitForClose(within: .seconds(2)))
        await server.stop()
    }

    @Test("after stopAccepting the port refuses connections, and answers on open connections close them")
    func stopAccepting() async throws {
        let server = try await TestServer.start { request, _ in request.respond(status: 200, json: "{}") }
        let kept = try await TestConnection(port: server.port)
        try await kept.sendRequest("GET", "/before")
        #expect(try await kept.readResponse().header("Connection") == nil)
        try await server.run { $0.stopAccepting() }
        await #expect(throws: TestClientError.self) { try await TestConnection(port: server.port) }
        try await kept.sendRequest("GET", "/during")
        let during = try await kept.readResponse()
        #expect(during.status == 200)
        #expect(during.header("Connection") == "close")
        #expect(await kept.waitForClose())
        await server.stop()
    }
}
