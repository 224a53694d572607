import HTTPCore
import Testing
import TributaryTesting

@Suite("Search: one query as JSON, a debounced live session as SSE")
struct SearchTests {
    struct World {
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(debounce: String = "150ms") async throws -> World {
            let upstream = try await ScriptedUpstream.start { SearchFixture.reply(to: $0) ?? .json("{}", status: 404) }
            let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL, debounce: debounce))
            return World(upstream: upstream, service: service)
        }

        var searches: [String] { upstream.requests.compactMap { $0.query["q"] } }

        func set(_ stream: String, _ value: [UInt8], input: String = "q") async throws -> TestResponse {
            try await TestHTTP.request(port: service.port, "PUT", "/streams/\(stream)/inputs/\(input)", body: value)
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("GET /search answers the upstream's items unchanged and in order; short queries answer [] without a call")
    func json() async throws {
        let world = try await World.start()
        let response = try await world.service.get("/search?q=swift")
        #expect(response.status == 200)
        #expect(response.text == SearchFixture.itemsJSON(for: "swift"))
        #expect(try await world.service.get("/search?q=sw").text == "[]")
        #expect(try await world.service.get("/search").text == "[]")
        #expect(world.searches == ["swift"])
        await world.stop()
    }

    @Test("rapid changes of q produce one upstream search, for the last value")
    func debounced() async throws {
        let world = try await World.start(debounce: "200ms")
        let stream = try await world.service.events("/search")
        let id = try await stream.announcedID()
        #expect(try await stream.next(type: "snapshot").data == "[]")
        // Five values pipelined on one connection: they arrive within the debounce however
        // busy the machine is, as typing does.
        let typing = try await TestConnection(port: world.service.port)
        let values = ["s", "sw", "swi", "swif", "swift"]
        try await typing.send(values.map { value in
            "PUT /streams/\(id)/inputs/q HTTP/1.1\r\nHost: x\r\nContent-Length: \(value.utf8.count)\r\n\r\n\(value)"
        }.joined())
        for _ in values { #expect(try await typing.readResponse().status == 202) }
        #expect(try await stream.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "swift"))
        #expect(world.searches == ["swift"])
        stream.close()
        await world.stop()
    }

    @Test("a search still running when q changes is cancelled: the upstream sees it close")
    func supersededSearchIsCancelled() async throws {
        let world = try await World.start(debounce: "50ms")
        let stream = try await world.service.events("/search?q=slowly")
        let id = try await stream.announcedID()
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.query["q"] == "slowly" && $0.inFlight } })
        #expect(try await world.set(id, Array("vapor".utf8)).status == 202)
        #expect(try await stream.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "vapor"))
        #expect(await world.upstream.records.wait(timeout: .seconds(10)) { $0.first { $0.query["q"] == "slowly" }?.closedByClient == true })
        stream.close()
        await world.stop()
    }

    @Test("input values are checked: not UTF-8 → 400, too long → 400, body over 4 KB → 413, unknown input → 404")
    func badValues() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/search")
        let id = try await stream.announcedID()
        let cases: [([UInt8], String, Int, String)] = [
            ([0xFF, 0xFE], "q", 400, "bad_request"),
            (Array(String(repeating: "q", count: 300).utf8), "q", 400, "bad_request"),
            (Array(repeating: 0x61, count: 5000), "q", 413, "input_too_large"),
            (Array("x".utf8), "page", 404, "unknown_input"),
        ]
        for (body, input, status, code) in cases {
            let response = try await world.set(id, body, input: input)
            #expect(response.status == status, "\(input) \(body.count) bytes")
            #expect(response.error?.code == code, "\(response.text)")
        }
        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(id)/triggers/reload").error?.code == "unknown_trigger")
        stream.close()
        await world.stop()
    }

    @Test("q's limit counts Unicode code points, as the API description's maxLength does, not what a reader sees")
    func queryLimitInCodePoints() async throws {
        let world = try await World.start()
        // 200 "é" written as e + U+0301: 200 characters to a reader, 400 code points.
        let combining = String(repeating: "e\u{301}", count: 200)
        let longest = String(repeating: "e\u{301}", count: 128)
        #expect(try await world.service.get("/search?q=" + QueryString.percentEncoded(combining)).error?.code == "bad_request")
        #expect(try await world.service.get("/search?q=" + QueryString.percentEncoded(longest)).status == 200)
        let stream = try await world.service.events("/search")
        let id = try await stream.announcedID()
        #expect(try await world.set(id, Array(combining.utf8)).error?.code == "bad_request")
        #expect(try await world.set(id, Array(longest.utf8)).status == 202)
        stream.close()
        await world.stop()
    }

    @Test("a search resource's input is named after its query parameter")
    func inputNamedAfterParameter() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json(#"{"items":[]}"#) }
        let yaml = ServiceHarness.viewModelsYAML(upstream: upstream.baseURL).replacing("parameter: q", with: "parameter: term")
        let service = try await ServiceHarness(yaml: yaml)
        let stream = try await service.events("/search?term=swift")
        let announcement = try await stream.next(type: "stream")
        #expect(announcement.data.hasSuffix(#""triggers":[],"inputs":["term"]}"#), "\(announcement.data)")
        let id = String(announcement.data.dropFirst(#"{"id":""#.count).prefix(32))
        #expect(try await TestHTTP.request(port: service.port, "PUT", "/streams/\(id)/inputs/term", body: Array("vapor".utf8)).status == 202)
        #expect(try await TestHTTP.request(port: service.port, "PUT", "/streams/\(id)/inputs/q", body: Array("vapor".utf8)).error?.code == "unknown_input")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.query["term"] == "vapor" } })
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("one stream's input does not reach another stream")
    func sessionsAreIsolated() async throws {
        let world = try await World.start(debounce: "50ms")
        let first = try await world.service.events("/search?q=vapor")
        let second = try await world.service.events("/search?q=nginx")
        let firstID = try await first.announcedID()
        let secondID = try await second.announcedID()
        #expect(try await first.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "vapor"))
        #expect(try await second.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "nginx"))
        #expect(try await world.set(firstID, Array("swift".utf8)).status == 202)
        #expect(try await first.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "swift"))
        #expect(try await world.set(secondID, Array("log".utf8)).status == 202)
        #expect(try await second.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "log"),
                "the second stream's next snapshot answers its own query, not the first stream's")
        first.close()
        second.close()
        await world.stop()
    }
}
