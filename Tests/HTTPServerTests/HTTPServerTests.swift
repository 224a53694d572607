import HTTPCore
import EventLoop
import Foundation
import HTTPServer
import Testing
import TributaryTesting

@Suite("HTTP server")
struct HTTPServerTests {
    struct Greeting: Codable, Equatable {
        var name: String
        var tags: [String]
    }

    @Test("a JSON body round-trips through a handler")
    func jsonRoundTrip() async throws {
        let server = try await TestServer.start { request, _ in
            guard let greeting = try? JSONDecoder().decode(Greeting.self, from: Data(request.body)) else {
                request.respond(.badRequest("not a greeting"))
                return
            }
            let reply = Greeting(name: "hello " + greeting.name, tags: greeting.tags.reversed())
            request.respond(status: 201, json: String(decoding: try! JSONEncoder().encode(reply), as: UTF8.self))
        }
        let body = try JSONEncoder().encode(Greeting(name: "Grüße \"✓\"", tags: ["a", "b"]))
        let response = try await TestHTTP.request(port: server.port, "POST", "/greet", headers: [("Content-Type", "application/json")], body: Array(body))
        #expect(response.status == 201)
        #expect(response.header("Content-Type") == "application/json")
        #expect(try response.decode(Greeting.self) == Greeting(name: "hello Grüße \"✓\"", tags: ["b", "a"]))
        await server.stop()
    }

    @Test("one keep-alive connection carries several requests")
    func keepAlive() async throws {
        let server = try await TestServer.start { request, _ in
            request.respond(status: 200, json: JSONWriter.object([("path", request.path)]))
        }
        let connection = try await TestConnection(port: server.port)
        for index in 0..<5 {
            try await connection.sendRequest("GET", "/item/\(index)")
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text == #"{"path":"/item/\#(index)"}"#)
        }
        await server.stop()
    }

    @Test("headers over the limit get 431 JSON, bodies over it 413 JSON, and the server keeps serving")
    func limits() async throws {
        let limits = HTTPServer.Limits(maxHeaderBytes: 1024, maxBodyBytes: 2048)
        let server = try await TestServer.start(limits: limits) { request, _ in
            request.respond(status: 200, json: #"{"ok":true}"#)
        }
        let bigHeader = try await TestHTTP.get(port: server.port, "/", headers: [("X-Padding", String(repeating: "x", count: 2000))])
        #expect(bigHeader.status == 431)
        #expect(try errorCode(bigHeader) == "headers_too_large")

        let bigBody = try await TestHTTP.request(port: server.port, "POST", "/", body: Array(repeating: 65, count: 4096))
        #expect(bigBody.status == 413)
        #expect(try errorCode(bigBody) == "body_too_large")

        // Far beyond our limit evhttp refuses by itself, without buffering the body.
        let huge = try await TestConnection(port: server.port)
        try await huge.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n")
        #expect(try await huge.readHead().status == 413)

        let healthy = try await TestHTTP.get(port: server.port, "/")
        #expect(healthy.status == 200)
        await server.stop()
    }

    @Test("a malformed request line is refused and the server keeps serving")
    func malformedRequest() async throws {
        let server = try await TestServer.start { request, _ in request.respond(status: 200, json: "{}") }
        let connection = try await TestConnection(port: server.port)
        try await connection.send("NONSENSE\r\n\r\n")
        let refused = (try? await connection.readHead().status) ?? 400
        #expect(refused == 400)
        #expect(try await TestHTTP.get(port: server.port, "/").status == 200)
        await server.stop()
    }

    @Test("a streamed answer arrives chunk by chunk; a write the socket takes at once says so, any other is followed by drained")
    func streaming() async throws {
        // (write's result, drained callbacks so far) for each write
        let writes = Observed<[(taken: Bool, drained: Int)]>([])
        let server = try await TestServer.start { request, _ in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            var sent = 0
            var drained = 0
            func next() {
                guard sent < 3 else { return request.endStream() }
                let taken = request.write(Array("data: \(sent)\n\n".utf8))
                sent += 1
                writes.update { $0.append((taken, drained)) }
                if taken { next() }
            }
            request.onDrained = {
                drained += 1
                next()
            }
            next()
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/events")
        let head = try await connection.readHead()
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        var chunks: [String] = []
        while let chunk = try await connection.readChunk() { chunks.append(String(decoding: chunk, as: UTF8.self)) }
        #expect(chunks == ["data: 0\n\n", "data: 1\n\n", "data: 2\n\n"])
        let written = writes.value
        // The first chunk waits behind the head, which evhttp has queued but not written; the
        // socket takes the others as they are written, and no drained callback follows them.
        #expect(written.map(\.taken) == [false, true, true])
        #expect(written.map(\.drained) == [0, 1, 1])
        await server.stop()
    }

    private func errorCode(_ response: TestResponse) throws -> String? {
        #expect(response.header("Content-Type") == "application/json")
        let document = try response.json() as? [String: Any]
        let error = document?["error"] as? [String: Any]
        #expect(error?["message"] is String)
        return error?["code"] as? String
    }

    /// A stream may stay open for hours, so once its own head is written it keeps only what it
    /// still uses (`ServerRequest.releaseHead`): 10,000 subscribers each holding their request
    /// headers were over a kilobyte apiece. What evhttp reads again when the stream ends must
    /// survive that: the client's `Connection: close`, and the deadline that closes a kept-alive
    /// connection left idle after the stream (its trickled next request: HostileClientTests).
    @Test("a stream lets go of its request's head once its own is written; Connection: close and the idle deadline still hold after it ends")
    func streamReleasesHead() async throws {
        struct Seen: Sendable, Equatable {
            var accept: String?
            var parameters: [String: String]
            var path: String
            var query: String?
        }
        let before = Observed<[Seen]>([])
        let after = Observed<[Seen]>([])
        let handler: @Sendable (ServerRequest, EventLoop) -> Void = { request, _ in
            if request.path == "/next" { return request.respond(status: 200, json: "{}") }
            func seen() -> Seen {
                Seen(accept: request.header("Accept"), parameters: request.queryParameters, path: request.path, query: request.query)
            }
            before.update { $0.append(seen()) }
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            after.update { $0.append(seen()) }
            request.write(Array("data: 1\n\n".utf8))
            request.endStream()
        }
        let quick = try await TestServer.start(limits: .init(timeout: .seconds(1)), handler: handler)
        let kept = try await TestConnection(port: quick.port)
        // The next request goes with the first, so no deadline can pass between the two.
        try await kept.send("GET /events?x=1 HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n" + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await kept.readHead().status == 200)
        var chunks: [[UInt8]] = []
        while let chunk = try await kept.readChunk() { chunks.append(chunk) }
        #expect(chunks == [Array("data: 1\n\n".utf8)])
        #expect(before.value == [Seen(accept: "text/event-stream", parameters: ["x": "1"], path: "/events", query: "x=1")])
        #expect(after.value == [Seen(accept: nil, parameters: [:], path: "/events", query: "x=1")], "path and query kept, the rest let go")
        #expect(try await kept.readResponse().status == 200, "the connection is kept after the stream")
        #expect(await kept.waitForClose(within: .seconds(30)), "an idle connection is closed at its deadline after a stream, too")
        await quick.stop()

        let patient = try await TestServer.start(handler: handler)  // a 60 s deadline: not what closes it
        let closing = try await TestConnection(port: patient.port)
        try await closing.send("GET /events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(try await closing.readHead().status == 200)
        while try await closing.readChunk() != nil {}
        #expect(await closing.waitForClose(within: .seconds(30)), "the client's Connection: close still ends the connection with the stream")
        await patient.stop()
    }
}

@Suite("Shared bytes")
struct SharedBytesTests {
    @Test("one buffer written to several streams reaches each intact and is freed once every socket took it")
    func sharedAcrossStreams() async throws {
        let released = Observed(false)
        let payload = Array(repeating: UInt8(ascii: "x"), count: 100_000) + Array("end".utf8)
        final class Holder: @unchecked Sendable {
            weak var bytes: SharedBytes?
            var requests: [ServerRequest] = []
        }
        let holder = Holder()
        let server = try await TestServer.start { request, _ in
            request.startStream(status: 200, headers: [])
            holder.requests.append(request)
            guard holder.requests.count == 3 else { return }
            let shared = SharedBytes(payload)
            holder.bytes = shared
            for open in holder.requests {
                // A socket that takes part of it at once: the rest waits as a reference.
                open.limitSocketSendBuffer(to: 4096)
                #expect(!open.write(shared), "a 100 KB chunk fitted a 4 KB send buffer")
            }
            for open in holder.requests {
                open.onDrained = {
                    open.endStream()
                    if holder.requests.allSatisfy({ !$0.isOpen }) { released.update { $0 = holder.bytes == nil } }
                }
            }
        }
        var clients: [TestConnection] = []
        for _ in 0..<3 { clients.append(try await TestConnection(port: server.port)) }
        for client in clients { try await client.sendRequest("GET", "/shared") }
        for client in clients {
            #expect(try await client.readHead().status == 200)
            var received: [UInt8] = []
            while let chunk = try await client.readChunk() { received += chunk }
            #expect(received == payload)
        }
        #expect(await released.wait(timeout: .seconds(5)) { $0 }, "the shared bytes outlived every stream")
        await server.stop()
    }

    @Test("an event's shared head and body that the socket takes in part arrive whole, in order, and drained follows")
    func headAndBodyInPart() async throws {
        let head = Array("id: 7\n".utf8)
        let body = Array("data: ".utf8) + Array(repeating: UInt8(ascii: "y"), count: 200_000) + Array("\n\n".utf8)
        let writes = Observed<[Bool]>([])
        let server = try await TestServer.start { request, _ in
            request.startStream(status: 200, headers: [])
            request.onDrained = {
                // The head went out first, then the event: both fitted at once or not at all.
                guard writes.value.count == 1 else { return request.endStream() }
                request.limitSocketSendBuffer(to: 4096)
                writes.update { $0.append(request.write(SharedBytes(head), then: SharedBytes(body))) }
            }
            writes.update { $0.append(request.write(SharedBytes(head), then: SharedBytes(Array("data: 0\n\n".utf8)))) }
        }
        let client = try await TestConnection(port: server.port)
        try await client.sendRequest("GET", "/events")
        #expect(try await client.readHead().status == 200)
        var chunks: [[UInt8]] = []
        while let chunk = try await client.readChunk() { chunks.append(chunk) }
        #expect(chunks == [head, Array("data: 0\n\n".utf8), head, body])
        #expect(writes.value == [false, false], "the first waits behind the head of the answer, the second did not fit")
        await server.stop()
    }

    /// The stream frames its own chunks (see `CEvhttpRequestFields`); a mistake there would
    /// corrupt every event stream, so this pins the bytes on the wire for both protocol versions.
    @Test("shared and plain writes are framed as chunks for HTTP/1.1, sent raw to HTTP/1.0, dropped for HEAD, and the stream ends cleanly")
    func framing() async throws {
        let shared = Array("shared event\n\n".utf8)
        let plain = Array(": heartbeat\n\n".utf8)
        let server = try await TestServer.start { request, _ in
            if request.uri == "/next" { return request.respond(status: 200, json: "{}") }
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            request.write(SharedBytes(shared))
            request.write(plain)
            request.write(SharedBytes(shared))
            request.endStream()
        }

        let http11 = try await TestConnection(port: server.port)
        try await http11.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try await http11.readHead()
        #expect(head.header("Transfer-Encoding") == "chunked")
        var chunks: [[UInt8]] = []
        while let chunk = try await http11.readChunk() { chunks.append(chunk) }
        #expect(chunks == [shared, plain, shared])
        try await http11.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await http11.readResponse().status == 200, "the connection is usable after the last chunk")

        // A HEAD request streams nothing, and leaves nothing behind for the next stream.
        let headOnly = try await TestConnection(port: server.port)
        try await headOnly.send("HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await headOnly.readHead().status == 200)
        let after = try await TestConnection(port: server.port)
        try await after.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try await after.readHead()
        var afterChunks: [[UInt8]] = []
        while let chunk = try await after.readChunk() { afterChunks.append(chunk) }
        #expect(afterChunks == [shared, plain, shared])

        let http10 = try await TestConnection(port: server.port)
        try await http10.send("GET /events HTTP/1.0\r\n\r\n")
        let whole = try await http10.readResponse()
        #expect(whole.header("Transfer-Encoding") == nil)
        #expect(whole.body == shared + plain + shared)
        await server.stop()
    }
}
