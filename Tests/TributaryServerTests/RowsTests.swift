import Testing
import TributaryTesting

@Suite("Rows: topics with paginated medias, per-stream loadMore")
struct RowsTests {
    struct World {
        let media: Observed<MediaFixture>
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(_ fixture: MediaFixture = MediaFixture(topics: ["a", "b", "c"])) async throws -> World {
            let media = Observed(fixture)
            let upstream = try await ScriptedUpstream.start { media.value.reply(to: $0) ?? .json("{}", status: 404) }
            let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL))
            return World(media: media, upstream: upstream, service: service)
        }

        func pageCalls(_ topic: String) -> Int { upstream.requests.filter { $0.path == "/topics/\(topic)/medias" }.count }

        func trigger(_ stream: String, _ name: String, _ query: String = "") async throws -> TestResponse {
            try await TestHTTP.request(port: service.port, "POST", "/streams/\(stream)/triggers/\(name)\(query)")
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("GET /rows answers every topic with its first page, in topic order")
    func jsonFirstPages() async throws {
        let world = try await World.start()
        let response = try await world.service.get("/rows")
        #expect(response.status == 200)
        #expect(response.text == world.media.value.rowsJSON())
        await world.stop()
    }

    @Test("loadMore loads that topic's next page only, keeps topic order, and is a no-op after the last page")
    func loadMoreThroughTheLastPage() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/rows")
        let id = try await stream.announcedID()
        #expect(try await stream.next(type: "snapshot").data == world.media.value.rowsJSON())

        #expect(try await world.trigger(id, "loadMore", "?topic=b").status == 202)
        #expect(try await stream.next(type: "snapshot").data == world.media.value.rowsJSON(loaded: ["b": 2]))
        #expect(try await world.trigger(id, "loadMore", "?topic=b").status == 202)
        #expect(try await stream.next(type: "snapshot").data == world.media.value.rowsJSON(loaded: ["b": 3]))
        #expect(world.pageCalls("b") == 3)
        #expect(world.pageCalls("a") == 1 && world.pageCalls("c") == 1, "other topics are untouched")

        #expect(try await world.trigger(id, "loadMore", "?topic=b").status == 202)   // past the last page
        #expect(try await world.trigger(id, "loadMore", "?topic=c").status == 202)
        let next = try await stream.next(type: "snapshot")
        #expect(next.data == world.media.value.rowsJSON(loaded: ["b": 3, "c": 2]), "the no-op produced no snapshot")
        #expect(world.pageCalls("b") == 3)
        stream.close()
        await world.stop()
    }

    @Test("a loadMore before the topic's first page is in is refused (409 not_ready), not accepted and lost; once it is in, it loads")
    func loadMoreBeforeTheFirstPage() async throws {
        var fixture = MediaFixture(topics: ["a", "b"])
        fixture.hangingFirstPages = ["a"]
        let world = try await World.start(fixture)
        let stream = try await world.service.events("/rows")
        let id = try await stream.announcedID()
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { records in
            records.contains { $0.path == "/topics/a/medias" && $0.inFlight } && records.contains { $0.path == "/topics/b/medias" && !$0.inFlight }
        })
        let early = try await world.trigger(id, "loadMore", "?topic=a")
        #expect(early.status == 409 && early.error?.code == "not_ready", "\(early.text)")
        #expect(early.error?.message.contains("has not loaded its first page yet") == true, "\(early.text)")
        #expect(try await world.trigger(id, "loadMore", "?topic=b").status == 202)
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.path == "/topics/b/medias" && $0.query["page"] == "2" } })
        stream.close()
        await world.stop()
    }

    @Test("reload starts the whole pipeline over: topics again, first pages again")
    func reload() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/rows")
        let id = try await stream.announcedID()
        _ = try await stream.next(type: "snapshot")
        #expect(try await world.trigger(id, "loadMore", "?topic=a").status == 202)
        #expect(try await stream.next(type: "snapshot").data == world.media.value.rowsJSON(loaded: ["a": 2]))
        world.media.update { $0.topics.append("d") }
        #expect(try await world.trigger(id, "reload").status == 202)
        #expect(try await stream.next(type: "snapshot").data == world.media.value.rowsJSON())
        #expect(world.upstream.requests.filter { $0.path == "/topics" }.count == 2)
        stream.close()
        await world.stop()
    }

    @Test("a topic whose medias fail becomes a row marked with its error; the others stay")
    func failingTopic() async throws {
        var fixture = MediaFixture(topics: ["a", "b", "c"])
        fixture.failing = ["b"]
        let world = try await World.start(fixture)
        let stream = try await world.service.events("/rows")
        let rows = try await stream.next(type: "snapshot").data
        let good = world.media.value
        #expect(rows.hasPrefix("[" + good.rowJSON("a", loaded: 1) + #",{"topic":{"id":"b","title":"Topic b"},"medias":[],"error":{"code":"upstream_status""#))
        #expect(rows.hasSuffix(good.rowJSON("c", loaded: 1) + "]"))
        #expect(try await world.service.get("/rows").text == rows, "the JSON answer marks the row the same way")
        stream.close()
        await world.stop()
    }

    @Test("one stream's triggers do not reach another stream")
    func streamsAreIsolated() async throws {
        let world = try await World.start()
        let first = try await world.service.events("/rows")
        let second = try await world.service.events("/rows")
        let firstID = try await first.announcedID()
        let secondID = try await second.announcedID()
        _ = try await first.next(type: "snapshot")
        _ = try await second.next(type: "snapshot")
        #expect(try await world.trigger(firstID, "loadMore", "?topic=a").status == 202)
        #expect(try await first.next(type: "snapshot").data == world.media.value.rowsJSON(loaded: ["a": 2]))
        #expect(try await world.trigger(secondID, "loadMore", "?topic=c").status == 202)
        #expect(try await second.next(type: "snapshot").data == world.media.value.rowsJSON(loaded: ["c": 2]),
                "the second stream's next snapshot has only its own page")
        first.close()
        second.close()
        await world.stop()
    }

    @Test("unknown streams and triggers are 404, bad arguments 400, all JSON")
    func unknownIDs() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/rows")
        let id = try await stream.announcedID()
        let cases: [(String, String, Int, String)] = [
            (String(repeating: "0", count: 32), "reload", 404, "unknown_stream"),
            ("nonexistent", "reload", 404, "unknown_stream"),
            (id, "dance", 404, "unknown_trigger"),
            (id, "loadMore", 400, "bad_request"),
            (id, "loadMore?topic=zzz", 400, "bad_request"),
        ]
        for (stream, trigger, status, code) in cases {
            let response = try await world.trigger(stream, trigger)
            #expect(response.status == status, "\(stream)/\(trigger)")
            #expect(response.error?.code == code, "\(stream)/\(trigger): \(response.text)")
        }
        let input = try await TestHTTP.request(port: world.service.port, "PUT", "/streams/\(id)/inputs/q", body: Array("x".utf8))
        #expect(input.status == 404)
        #expect(input.error?.code == "unknown_input")
        stream.close()
        await world.stop()
    }

    @Test("a stream's resources go when its connection closes: its page call is cancelled and its id is forgotten")
    func releasedOnDisconnect() async throws {
        var fixture = MediaFixture(topics: ["a", "b"])
        fixture.hangingNextPages = ["a"]
        let world = try await World.start(fixture)
        let stream = try await world.service.events("/rows")
        let id = try await stream.announcedID()
        _ = try await stream.next(type: "snapshot")
        #expect(try await world.trigger(id, "loadMore", "?topic=a").status == 202)
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.query["page"] == "2" && $0.inFlight } })
        stream.close()
        #expect(await world.upstream.records.wait(timeout: .seconds(10)) { $0.contains { $0.query["page"] == "2" && $0.closedByClient } })
        let gone = try await world.trigger(id, "loadMore", "?topic=b")
        #expect(gone.status == 404)
        #expect(gone.error?.code == "unknown_stream")
        await world.stop()
    }
}
