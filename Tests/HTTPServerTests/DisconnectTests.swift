import EventLoop
import UpstreamClient
import Testing
import TributaryTesting

@Suite("Disconnect detection")
struct DisconnectTests {
    @Test("a client that closes while its handler is pending is noticed")
    func pendingHandler() async throws {
        let received = Observed(false)
        let disconnected = Observed(false)
        let server = try await TestServer.start { request, _ in
            request.onDisconnect = { disconnected.update { $0 = true } }
            received.update { $0 = true }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/slow")
        #expect(await received.wait(timeout: .seconds(10)) { $0 })
        connection.close()
        #expect(await disconnected.wait(timeout: .seconds(10)) { $0 })
        await server.stop()
    }

    @Test("a client that resets its connection while the handler is pending is noticed")
    func pendingHandlerReset() async throws {
        let received = Observed(false)
        let disconnected = Observed(false)
        let server = try await TestServer.start { request, _ in
            request.onDisconnect = { disconnected.update { $0 = true } }
            received.update { $0 = true }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/slow")
        #expect(await received.wait(timeout: .seconds(10)) { $0 })
        connection.reset()
        #expect(await disconnected.wait(timeout: .seconds(10)) { $0 })
        await server.stop()
    }

    @Test("a disconnect cancels the handler's upstream call: the upstream sees its connection close")
    func cancelsUpstreamWork() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .hang }
        let base = try BaseURL(upstream.baseURL)
        let server = try await TestServer.start { request, loop in
            let client = UpstreamClient(loop: loop)
            let call = client.execute(UpstreamRequest(base: base, path: "/work", timeout: .seconds(600))) { _ in
                request.respond(status: 200, json: "{}")
            }
            request.onDisconnect = { withExtendedLifetime(client) { call.cancel() } }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/")
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 1 })
        connection.close()
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.first?.closedByClient == true })
        await server.stop()
        await upstream.shutdown()
    }

    @Test("a streaming client that closes is noticed, and writes after it are dropped")
    func streamingClient() async throws {
        let disconnected = Observed(false)
        let server = try await TestServer.start { request, loop in
            request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
            request.write(Array(": hello\n\n".utf8))
            request.onDisconnect = {
                request.write(Array("data: too late\n\n".utf8))
                disconnected.update { $0 = true }
            }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/events")
        #expect(try await connection.readHead().status == 200)
        #expect(try await connection.readChunk() == Array(": hello\n\n".utf8))
        connection.close()
        #expect(await disconnected.wait(timeout: .seconds(10)) { $0 })
        await server.stop()
    }

    @Test("a quiet client of a long stream is not timed out by the server's read timeout")
    func quietStreamOutlivesReadTimeout() async throws {
        let disconnected = Observed(false)
        let server = try await TestServer.start(limits: .init(timeout: .milliseconds(200))) { request, loop in
            request.startStream(status: 200, headers: [])
            request.onDisconnect = { disconnected.update { $0 = true } }
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(700))) {
                request.write(Array("late but welcome".utf8))
                request.endStream()
            }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/events")
        #expect(try await connection.readHead().status == 200)
        #expect(try await connection.readChunk() == Array("late but welcome".utf8))
        #expect(try await connection.readChunk() == nil)
        #expect(disconnected.value == false)
        await server.stop()
    }

    @Test("an answered keep-alive request does not report a disconnect when the connection later closes")
    func answeredRequestIsNotADisconnect() async throws {
        let disconnects = Observed(0)
        let server = try await TestServer.start { request, loop in
            request.onDisconnect = { disconnects.update { $0 += 1 } }
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(20))) {
                request.respond(status: 200, json: "{}")
            }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("GET", "/")
        #expect(try await connection.readResponse().status == 200)
        try await connection.sendRequest("GET", "/")
        #expect(try await connection.readResponse().status == 200)
        connection.close()
        // A request on a fresh connection proves the server went on past the close.
        #expect(try await TestHTTP.get(port: server.port, "/").status == 200)
        #expect(disconnects.value == 0)
        await server.stop()
    }
}
