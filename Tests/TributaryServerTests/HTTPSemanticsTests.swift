import CZlib
import HTTPServer
import Testing
import TributaryTesting

/// The HTTP semantics of resource answers (DESIGN.md, "Contract, part 2"): `Vary`, `ETag` and
/// `304`, `Cache-Control` per kind of answer, gzip, `HEAD`, all seen by a client over loopback.
@Suite("HTTP semantics: Vary, ETag and 304, Cache-Control, gzip, HEAD")
struct HTTPSemanticsTests {
    /// A service whose `/groups` has `count` groups (20 make a body over 1 KiB, 2 one under),
    /// with `/rows` and `/search` beside it.
    struct World {
        let fixture: TaskGroupsFixture
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(groups count: Int = 20) async throws -> World {
            let fixture = TaskGroupsFixture(count: count)
            let upstream = try await ScriptedUpstream.start { request in
                fixture.reply(to: request) ?? SearchFixture.reply(to: request) ?? .json("{}", status: 404)
            }
            let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL) + "\n"
                + ServiceHarness.viewModelResourcesYAML())
            return World(fixture: fixture, upstream: upstream, service: service)
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    // MARK: - Vary and Cache-Control

    @Test("every answer of a resource URL says Vary: Accept, JSON (with Accept-Encoding), stream and error alike")
    func varyOnAccept() async throws {
        let world = try await World.start()
        let json = try await world.service.get("/groups")
        #expect(json.status == 200)
        #expect(json.header("Vary") == "Accept, Accept-Encoding")
        let stream = try await world.service.events("/groups")
        #expect(stream.head.header("Vary") == "Accept")
        stream.close()
        let refused = try await world.service.get("/search?q=" + String(repeating: "x", count: 1000))
        #expect(refused.status == 400)
        #expect(refused.header("Vary") == "Accept")
        let search = try await world.service.get("/search?q=swift")
        #expect(search.status == 200)
        #expect(search.header("Vary") == "Accept, Accept-Encoding")
        await world.stop()
    }

    @Test("Vary adds up with CORS's Vary: Origin instead of replacing it")
    func varyWithCORS() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceHarness(yaml: "server:\n  corsOrigins: [\"https://app.example\"]\n"
            + ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let response = try await service.get("/groups", headers: [("Origin", "https://app.example")])
        #expect(response.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(response.header("Vary") == "Origin, Accept, Accept-Encoding")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("Cache-Control: no-cache on JSON and streams; no-store on /healthz, /metrics, stream control and errors")
    func cacheControl() async throws {
        let world = try await World.start(groups: 2)
        let port = world.service.port
        #expect(try await world.service.get("/groups").header("Cache-Control") == "no-cache")
        let stream = try await world.service.events("/groups")
        #expect(stream.head.header("Cache-Control") == "no-cache")
        let id = try await stream.announcedID()
        let control = try await TestHTTP.request(port: port, "POST", "/streams/\(id)/triggers/reload")
        #expect(control.status == 202)
        #expect(control.header("Cache-Control") == "no-store")
        stream.close()
        for path in ["/healthz", "/metrics"] {
            let response = try await world.service.get(path)
            #expect(response.status == 200)
            #expect(response.header("Cache-Control") == "no-store", "\(path)")
        }
        let errors = [
            try await world.service.get("/nowhere"),
            try await TestHTTP.request(port: port, "POST", "/streams/\(String(repeating: "0", count: 32))/triggers/reload"),
            try await TestHTTP.request(port: port, "DELETE", "/groups"),
        ]
        #expect(errors.map(\.status) == [404, 404, 405])
        for error in errors { #expect(error.header("Cache-Control") == "no-store", "\(error.status) \(error.text)") }
        #expect(try await world.service.post("/groups/reload").header("Cache-Control") == "no-store")
        await world.stop()
    }

    // MARK: - ETag and If-None-Match

    @Test("the JSON answer's ETag is the id an event stream gives the same document")
    func etagIsTheSnapshotID() async throws {
        let world = try await World.start()
        let json = try await world.service.get("/groups")
        #expect(json.text == world.fixture.mergedJSON)
        let stream = try await world.service.events("/groups")
        let snapshot = try await stream.next(type: "snapshot")
        stream.close()
        #expect(snapshot.data == json.text)
        let id = try #require(snapshot.id)
        #expect(json.header("ETag") == "\"\(id)\"")
        await world.stop()
    }

    @Test("If-None-Match holding the tag answers 304 with no body and the same validators; the connection stays in step",
          arguments: ["TAG", "W/TAG", #""stale", TAG"#, "*"])
    func notModified(condition: String) async throws {
        let world = try await World.start()
        let full = try await world.service.get("/groups")
        let tag = try #require(full.header("ETag"))
        let connection = try await TestConnection(port: world.service.port)
        try await connection.sendRequest("GET", "/groups", headers: [("If-None-Match", condition.replacing("TAG", with: tag))])
        let answer = try await connection.readResponse()
        #expect(answer.status == 304)
        #expect(answer.body.isEmpty)
        #expect(answer.header("Content-Length") == nil)
        for name in ["ETag", "Vary", "Cache-Control"] { #expect(answer.header(name) == full.header(name), "\(name)") }
        try await connection.sendRequest("GET", "/healthz")
        let next = try await connection.readResponse()
        #expect(next.status == 200 && next.text == #"{"status":"ok"}"#, "nothing of a body came between the answers")
        connection.close()
        await world.stop()
    }

    @Test("a stale tag, or a malformed If-None-Match, gets the whole document", arguments: [#""0123456789abcdef""#, "TAG-unquoted"])
    func staleTag(condition: String) async throws {
        let world = try await World.start(groups: 2)
        let tag = try #require(try await world.service.get("/groups").header("ETag"))
        let answer = try await world.service.get("/groups", headers: [("If-None-Match", condition.replacing("TAG", with: tag.filter { $0 != "\"" }))])
        #expect(answer.status == 200)
        #expect(answer.text == world.fixture.mergedJSON)
        await world.stop()
    }

    @Test("/openapi.json has a validator and gzip too: API explorers fetch it again and again")
    func openAPIDocument() async throws {
        let world = try await World.start(groups: 2)
        let plain = try await world.service.get("/openapi.json")
        #expect(plain.status == 200 && plain.header("Cache-Control") == "no-cache")
        let tag = try #require(plain.header("ETag"))
        #expect(try await world.service.get("/openapi.json", headers: [("If-None-Match", tag)]).status == 304)
        let compressed = try await world.service.get("/openapi.json", headers: [("Accept-Encoding", "gzip")])
        #expect(compressed.header("Content-Encoding") == "gzip")
        #expect(Self.gunzip(compressed.body) == plain.body)
        await world.stop()
    }

    // MARK: - gzip

    @Test("a JSON body of 1 KiB or more is gzipped for a client that accepts it, and inflates to exactly the plain body")
    func gzipLargeBody() async throws {
        let world = try await World.start(groups: 20)
        let plain = try await world.service.get("/groups")
        #expect(plain.body.count >= 1024)
        #expect(plain.header("Content-Encoding") == nil)
        let compressed = try await world.service.get("/groups", headers: [("Accept-Encoding", "deflate, gzip;q=0.8, br")])
        #expect(compressed.status == 200)
        #expect(compressed.header("Content-Encoding") == "gzip")
        #expect(compressed.header("Vary") == "Accept, Accept-Encoding")
        #expect(compressed.header("ETag") == "W/" + (plain.header("ETag") ?? ""), "the same document in other bytes: a weak tag")
        #expect(compressed.body.count < plain.body.count)
        #expect(Self.gunzip(compressed.body) == plain.body)
        // The weak tag validates as well: weak comparison, as If-None-Match asks.
        let again = try await world.service.get("/groups", headers: [("Accept-Encoding", "gzip"), ("If-None-Match", compressed.header("ETag")!)])
        #expect(again.status == 304)
        await world.stop()
    }

    @Test("no gzip for a body under 1 KiB, for gzip;q=0, nor without Accept-Encoding")
    func noGzip() async throws {
        let small = try await World.start(groups: 2)
        let response = try await small.service.get("/groups", headers: [("Accept-Encoding", "gzip")])
        #expect(response.body.count < 1024)
        #expect(response.header("Content-Encoding") == nil)
        #expect(response.text == small.fixture.mergedJSON)
        await small.stop()

        let large = try await World.start(groups: 20)
        for refusal in ["gzip;q=0", "gzip; q=0.000, identity", "br", "*;q=0"] {
            let response = try await large.service.get("/groups", headers: [("Accept-Encoding", refusal)])
            #expect(response.header("Content-Encoding") == nil, "\(refusal)")
            #expect(response.text == large.fixture.mergedJSON, "\(refusal)")
        }
        #expect(try await large.service.get("/groups", headers: [("Accept-Encoding", "*")]).header("Content-Encoding") == "gzip")
        await large.stop()
    }

    @Test("an event stream is never compressed, whatever the client accepts")
    func streamsStayPlain() async throws {
        let world = try await World.start(groups: 20)
        let stream = try await world.service.events("/groups", headers: [("Accept-Encoding", "gzip")])
        #expect(stream.head.header("Content-Encoding") == nil)
        #expect(try await stream.next(type: "snapshot").data == world.fixture.mergedJSON)
        stream.close()
        await world.stop()
    }

    // MARK: - HEAD

    @Test("HEAD answers the headers GET would, Content-Length and Content-Encoding included, no body; a GET after it reads in step",
          arguments: [[], [("Accept-Encoding", "gzip")]])
    func head(extra: [(String, String)]) async throws {
        let world = try await World.start(groups: 20)
        let connection = try await TestConnection(port: world.service.port)
        try await connection.sendRequest("HEAD", "/groups", headers: extra)
        let head = try await connection.readResponse(method: "HEAD")
        try await connection.sendRequest("GET", "/groups", headers: extra)
        let get = try await connection.readResponse()
        #expect(head.status == 200 && get.status == 200)
        for name in ["Content-Type", "Content-Encoding", "Content-Length", "ETag", "Vary", "Cache-Control"] {
            #expect(head.header(name) == get.header(name), "\(name)")
        }
        #expect(head.header("Content-Length") == String(get.body.count))
        #expect(get.header("Content-Encoding") == (extra.isEmpty ? nil : "gzip"))
        let decoded = extra.isEmpty ? get.body : Self.gunzip(get.body)
        #expect(decoded == Array(world.fixture.mergedJSON.utf8), "the GET after the HEAD read its own body, whole")
        connection.close()
        await world.stop()
    }

    // MARK: - The parsers, on their own

    @Test("If-None-Match: lists, weak tags, *, and commas inside a tag")
    func ifNoneMatchParsing() {
        #expect(EntityTag.ifNoneMatch(#""abc""#, matches: "abc"))
        #expect(EntityTag.ifNoneMatch(#"W/"abc""#, matches: "abc"))
        #expect(EntityTag.ifNoneMatch(#""x", W/"y" ,"abc""#, matches: "abc"))
        #expect(EntityTag.ifNoneMatch(" * ", matches: "abc"))
        #expect(!EntityTag.ifNoneMatch(#""a,bc""#, matches: "abc"))
        #expect(EntityTag.ifNoneMatch(#""a,bc", "abc""#, matches: "abc"))
        #expect(!EntityTag.ifNoneMatch("abc", matches: "abc"), "an unquoted tag is no tag")
        #expect(!EntityTag.ifNoneMatch(#""abc"#, matches: "abc"), "an unterminated one neither")
        #expect(!EntityTag.ifNoneMatch(#""abcd""#, matches: "abc"))
        #expect(!EntityTag.ifNoneMatch("*, \"x\"", matches: "abc"), "* stands alone")
    }

    @Test("Accept-Encoding: q-values decide; gzip named wins over *")
    func acceptEncodingParsing() {
        #expect(QualityList.allowsGzip("gzip"))
        #expect(QualityList.allowsGzip("GZIP;Q=0.5"))
        #expect(QualityList.allowsGzip("x-gzip"))
        #expect(QualityList.allowsGzip("br;q=1.0, *;q=0.1"))
        #expect(!QualityList.allowsGzip(nil))
        #expect(!QualityList.allowsGzip(""))
        #expect(!QualityList.allowsGzip("gzip;q=0"))
        #expect(!QualityList.allowsGzip("gzip;q=0, *"))
        #expect(!QualityList.allowsGzip("identity"))
    }

    /// `bytes` inflated by zlib as one gzip member, or nil if they are not exactly that.
    static func gunzip(_ bytes: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard tributary_inflate_init_gzip(&stream) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var input = bytes
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16384)
        return input.withUnsafeMutableBufferPointer { input -> [UInt8]? in
            stream.next_in = input.baseAddress
            stream.avail_in = uInt(input.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, out.count - Int(stream.avail_out))
                }
                output += chunk[..<produced]
                if status == Z_STREAM_END { return stream.avail_in == 0 ? output : nil }
                guard status == Z_OK else { return nil }
            }
        }
    }
}
