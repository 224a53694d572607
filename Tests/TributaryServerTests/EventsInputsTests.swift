import Foundation
import Testing
import TributaryTesting

@Suite("GET /events: a view's events name the input values they answer")
struct EventsInputsTests {
    typealias TaggedSnapshot = EventsStreamTests.TaggedSnapshot

    /// Rows and search over one scripted upstream whose search for "broken" answers 500.
    struct World {
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start() async throws -> World {
            let media = MediaFixture(topics: ["a"])
            let upstream = try await ScriptedUpstream.start { request in
                if request.path == "/search/repositories" && request.query["q"] == "broken" { return .json(#"{"down":true}"#, status: 500) }
                return media.reply(to: request) ?? SearchFixture.reply(to: request) ?? .json("{}", status: 404)
            }
            let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL, debounce: "50ms"))
            return World(upstream: upstream, service: service)
        }

        func set(_ stream: String, _ value: String) async throws {
            let answer = try await TestHTTP.request(port: service.port, "PUT", "/streams/\(stream)/inputs/q", body: Array(value.utf8))
            #expect(answer.status == 202)
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("each search snapshot and error names its query, even when the documents are the same; other resources' name none")
    func searchNamesItsQuery() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/events?resource=rows&resource=search&search.q=swift")
        let search = try #require(try await EventsStreamTests.announcements(stream, 2).first { $0.resource == "search" }).id
        var first: [String: TaggedSnapshot] = [:]
        while first.count < 2 {
            let snapshot = try TaggedSnapshot(try await stream.next())
            first[snapshot.resource] = snapshot
        }
        #expect(first["rows"]?.inputs == [:])
        #expect(first["search"]?.inputs == ["q": "swift"])
        #expect(first["search"]?.document == SearchFixture.itemsJSON(for: "swift"))

        try await world.set(search, "swift-n")
        let narrower = try TaggedSnapshot(try await stream.next())
        #expect(narrower.inputs == ["q": "swift-n"])
        #expect(narrower.document == SearchFixture.itemsJSON(for: "swift-n"))

        // The same document for another query is still news: the results now answer it.
        try await world.set(search, "swift-ni")
        let same = try TaggedSnapshot(try await stream.next())
        #expect(same.inputs == ["q": "swift-ni"])
        #expect(same.document == narrower.document)
        #expect(same.version(of: "search") == narrower.version(of: "search"))

        try await world.set(search, "broken")
        let failure = try await stream.next()
        #expect(failure.type == "error")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(failure.data.utf8)) as? [String: Any])
        #expect(object["resource"] as? String == "search")
        #expect(object["inputs"] as? [String: String] == ["q": "broken"])
        #expect((object["error"] as? [String: Any])?["code"] as? String == "upstream_status")

        try await world.set(search, "vapor")
        let recovered = try TaggedSnapshot(try await stream.next())
        #expect(recovered.inputs == ["q": "vapor"])
        #expect(recovered.document == SearchFixture.itemsJSON(for: "vapor"))
        stream.close()
        await world.stop()
    }

    @Test("clients whose queries find the same document each see their own query named, though their events' ids are the same")
    func sameDocumentOtherQueries() async throws {
        let world = try await World.start()
        // "swift-n" and "swift-ni" find the same document, so every client's id is the same
        // `search:<version>`: an event the worker keeps whole for the next client with that id
        // must be kept per query too, or the third client would be told it sees "swift-ni".
        var streams: [SSEClient] = []
        for query in ["swift-n", "swift-ni", "swift-n", "swift-ni"] {
            let stream = try await world.service.events("/events?resource=search&search.q=\(query)")
            _ = try await EventsStreamTests.announcements(stream, 1)
            let snapshot = try TaggedSnapshot(try await stream.next())
            #expect(snapshot.inputs == ["q": query])
            #expect(snapshot.document == SearchFixture.itemsJSON(for: "swift-n"))
            streams.append(stream)
        }
        for stream in streams { stream.close() }
        await world.stop()
    }

    @Test("a search's own stream is as before: documents only, and no event for a query that finds the same one")
    func singleStreamUnchanged() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/search?q=swift-n")
        let id = try await stream.announcedID()
        #expect(try await stream.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "swift-n"))
        try await world.set(id, "swift-ni")
        // Answered, not cancelled: the service has its result before "vapor" is even searched.
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.query["q"] == "swift-ni" && !$0.inFlight } })
        try await world.set(id, "vapor")
        let next = try await stream.next()
        #expect(next.type == "snapshot")
        #expect(next.data == SearchFixture.itemsJSON(for: "vapor"), "nothing was sent for swift-ni, whose document was the same")
        #expect(world.upstream.requests.first { $0.query["q"] == "swift-ni" }?.closedByClient == false)
        stream.close()
        await world.stop()
    }
}
