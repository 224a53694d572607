import Aggregation
import Foundation
import Testing
import TributaryTesting

@Suite("?updates=patch: a snapshot, then RFC 6902 patches that rebuild each document")
struct PatchStreamTests {
    typealias GroupsWorld = GroupsStreamTests.World
    typealias EventsWorld = EventsStreamTests.World

    /// What a client has, rebuilt from every event as a client library would: a snapshot
    /// replaces a resource's document, a patch is applied to it (``JSONPatchApplier``).
    struct Client {
        var documents: [String: JSON] = [:]
        /// The operations of the last patch taken.
        var lastPatch: [JSON] = []

        /// Takes a single stream's `snapshot` or `patch` of `resource`.
        mutating func take(_ event: ServerSentEvent, of resource: String) throws {
            let data = try JSON(parsing: Array(event.data.utf8))
            switch event.type {
            case "snapshot": documents[resource] = data
            case "patch": try apply(data, to: resource)
            default: Issue.record("a \(event.type) event where a snapshot or a patch was due: \(event.data)")
            }
        }

        /// Takes a `GET /events` event, `{"resource":…,"data":…}` or `{"resource":…,"patch":[…]}`;
        /// the resource it was of.
        @discardableResult
        mutating func takeTagged(_ event: ServerSentEvent) throws -> String {
            let data = try JSON(parsing: Array(event.data.utf8))
            let resource = try #require(data["resource"]?.stringValue)
            switch event.type {
            case "snapshot": documents[resource] = try #require(data["data"])
            case "patch": try apply(try #require(data["patch"]), to: resource)
            default: Issue.record("a \(event.type) event where a snapshot or a patch was due: \(event.data)")
            }
            return resource
        }

        private mutating func apply(_ patch: JSON, to resource: String) throws {
            let document = try #require(documents[resource], "a patch of \(resource) before any snapshot of it")
            lastPatch = patch.arrayValue ?? []
            documents[resource] = try JSONPatchApplier.apply(patch, to: document)
        }
    }

    /// Checks `document` against a JSON GET of `path`, whose ETag must be `version`.
    static func expectCurrent(
        _ document: JSON?, version: String?, get path: String, on service: ServiceHarness, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let answer = try await service.get(path)
        let served = try JSON(parsing: answer.body)
        #expect(document.map { JSONPatchApplier.sameValue($0, served) } == true,
                "rebuilt: \(document.map { String(decoding: $0.serialized, as: UTF8.self) } ?? "nothing"), served: \(answer.text)",
                sourceLocation: sourceLocation)
        if let version { #expect(answer.header("ETag") == "\"\(version)\"", sourceLocation: sourceLocation) }
    }

    // MARK: - One resource

    @Test("GET /groups?updates=patch: a snapshot, then one patch per change whose id is the new ETag; one changed count is one replace")
    func groupsPatches() async throws {
        let world = try await GroupsWorld.start(groups: 40)
        let stream = try await world.service.events("/groups?updates=patch")
        var client = Client()
        let first = try await stream.next(type: "snapshot")
        try client.take(first, of: "groups")
        var lastID = first.id

        let changes: [(String, (inout TaskGroupsFixture) -> Void)] = [
            ("a count", { $0.groups[7].taskCount = 999 }),
            ("an item removed", { $0.groups.remove(at: 20) }),
            ("an item added", { $0.groups.insert(.init(id: "new", name: "Added", taskCount: 5, lastUpdated: "2026-11-30T00:00:00Z"), at: 3) }),
            ("two items swapped", { $0.groups.swapAt(10, 30) }),
            ("a name with escapes and a date", {
                $0.groups[0].name = #"Renamed "zero" ✓ / ~ \"#
                $0.groups[0].lastUpdated = "2026-12-01T09:30:00Z"
            }),
        ]
        for (what, change) in changes {
            world.fixture.update(change)
            try await world.reloadAndWaitForRefresh()
            let event = try await stream.next()
            #expect(event.type == "patch", "after \(what)")
            #expect(event.id != lastID && event.id?.count == 16)
            lastID = event.id
            try client.take(event, of: "groups")
            try await Self.expectCurrent(client.documents["groups"], version: event.id, get: "/groups", on: world.service)
            if what == "a count" {
                #expect(event.data == #"[{"op":"replace","path":"/7/taskCount","value":999}]"#)
            }
            if what == "an item removed" { #expect(event.data == #"[{"op":"remove","path":"/20"}]"#) }
            if what == "two items swapped" { #expect(client.lastPatch.count == 2) }
        }
        stream.close()
        await world.stop()
    }

    @Test("a patch that would not be smaller than the document is sent as a snapshot")
    func snapshotWhenNotSmaller() async throws {
        let world = try await GroupsWorld.start(groups: 1)
        let stream = try await world.service.events("/groups?updates=patch")
        _ = try await stream.next(type: "snapshot")
        // Its one item replaced by another: a remove and an add, longer than the document.
        world.fixture.update { $0.groups[0] = .init(id: "other", name: "Other", taskCount: 1, lastUpdated: "2026-01-01T00:00:00Z") }
        try await world.reloadAndWaitForRefresh()
        let event = try await stream.next()
        #expect(event.type == "snapshot")
        #expect(event.data == world.fixture.value.mergedJSON)
        // A small change of it is a patch again.
        world.changeTaskCount(of: 0, to: 2)
        try await world.reloadAndWaitForRefresh()
        #expect(try await stream.next().type == "patch")
        stream.close()
        await world.stop()
    }

    @Test("without updates, or with updates=snapshot, every change is a snapshot, as before")
    func snapshotsByDefault() async throws {
        let world = try await GroupsWorld.start()
        for path in ["/groups", "/groups?updates=snapshot", "/groups?updates="] {
            let stream = try await world.service.events(path)
            _ = try await stream.next(type: "snapshot")
            world.changeTaskCount(of: 1, to: Int.random(in: 100...100_000))
            try await world.reloadAndWaitForRefresh()
            let event = try await stream.next()
            #expect(event.type == "snapshot", "\(path)")
            #expect(event.data == world.fixture.value.mergedJSON)
            stream.close()
        }
        await world.stop()
    }

    @Test("any other updates value is a JSON 400 invalid_parameter naming updates, before any event, on a resource and on /events")
    func invalidUpdates() async throws {
        let world = try await EventsWorld.start(names: .prefixed("invalidupdates"))
        let paths = ["/invalidupdatesgroups?updates=patches", "/invalidupdatesrows?updates=PATCH", "/invalidupdatessearch?q=swift&updates=json"]
        for path in paths + ["/events?resource=invalidupdatesgroups&updates=diff"] {
            let answer = try await TestHTTP.get(port: world.service.port, path, headers: [("Accept", "text/event-stream")])
            #expect(answer.status == 400, "\(path)")
            #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true)
            #expect(answer.error?.code == "invalid_parameter")
            #expect(answer.error?.message.contains("updates") == true)
        }
        #expect(try await world.nothingSubscribed())
        // A JSON answer is the same with either mode, and refuses a mode that does not exist.
        for path in paths {
            #expect(try await world.service.get(path).error?.code == "invalid_parameter", "\(path)")
        }
        let plain = try await world.service.get("/invalidupdatesgroups")
        let patched = try await world.service.get("/invalidupdatesgroups?updates=patch")
        #expect(plain.status == 200 && patched.body == plain.body && patched.header("ETag") == plain.header("ETag"))
        await world.stop()
    }

    @Test("Last-Event-ID of the current version sends nothing, and the next change is a patch from it; another id gets a snapshot")
    func resume() async throws {
        let world = try await GroupsWorld.start(groups: 10)
        // It stays open: the shared pipeline runs on, and a stream joining it gets its latest
        // state at once (were it stopped, the change below could be the first fetch of a new one).
        let first = try await world.service.events("/groups?updates=patch")
        let snapshot = try await first.next(type: "snapshot")
        let version = try #require(snapshot.id)
        var client = Client()
        try client.take(snapshot, of: "groups")

        let resumed = try await world.service.events("/groups?updates=patch", headers: [("Last-Event-ID", version)])
        #expect(try await resumed.next().type == "stream")
        world.changeTaskCount(of: 4, to: 4444)
        try await world.reloadAndWaitForRefresh()
        let patch = try await resumed.next()
        #expect(patch.type == "patch", "nothing before the change, then a patch from the version the client has")
        #expect(patch.data == #"[{"op":"replace","path":"/4/taskCount","value":4444}]"#)
        try client.take(patch, of: "groups")
        try await Self.expectCurrent(client.documents["groups"], version: patch.id, get: "/groups", on: world.service)
        resumed.close()

        // The version before that one is not the current one: a snapshot.
        let stale = try await world.service.events("/groups?updates=patch", headers: [("Last-Event-ID", version)])
        let again = try await stale.next(type: nil)
        #expect(again.type == "stream")
        let whole = try await stale.next()
        #expect(whole.type == "snapshot")
        #expect(whole.id == patch.id)
        stale.close()
        first.close()
        await world.stop()
    }

    @Test("subscribers of one pipeline get the same patch; one that skipped versions gets a patch from the one it has")
    func sharedAndSkipped() async throws {
        let world = try await GroupsWorld.start(groups: 150, nameLength: 2000)
        var fast: [SSEClient] = []
        for _ in 0..<5 {
            let stream = try await world.service.events("/groups?updates=patch")
            _ = try await stream.next(type: "snapshot")
            fast.append(stream)
        }
        // One that does not read: its socket fills with the first (~300 KB) snapshot.
        let slow = try await world.service.events("/groups?updates=patch", receiveBuffer: 4096)
        for round in 1...5 {
            world.changeTaskCount(of: round, to: 1000 + round)
            try await world.reloadAndWaitForRefresh()
            var data: Set<String> = []
            for stream in fast {
                let event = try await stream.next()
                #expect(event.type == "patch")
                data.insert(event.data)
            }
            #expect(data == [#"[{"op":"replace","path":"/\#(round)/taskCount","value":\#(1000 + round)}]"#])
        }
        slow.connection.setTimeout(.seconds(10))
        let current = try JSON(parsing: Array(world.fixture.value.mergedJSON.utf8))
        var client = Client()
        var events: [ServerSentEvent] = []
        while client.documents["groups"].map({ JSONPatchApplier.sameValue($0, current) }) != true {
            let event = try await slow.next()
            guard event.type != "stream" else { continue }
            try client.take(event, of: "groups")
            events.append(event)
        }
        #expect(events.first?.type == "snapshot")
        #expect(events.dropFirst().allSatisfy { $0.type == "patch" } && events.count <= 3,
                "the latest state as a patch from the version it has: \(events.map(\.type))")
        try await Self.expectCurrent(client.documents["groups"], version: events.last?.id, get: "/groups", on: world.service)
        for stream in fast { stream.close() }
        slow.close()
        await world.stop()
    }

    // MARK: - GET /events

    @Test("/events?updates=patch with three resources: tagged patches rebuild each document, search's naming its query")
    func eventsThreeResources() async throws {
        let world = try await EventsWorld.start(names: .prefixed("patched"), groups: 6)
        let (groups, rows, search) = (world.names.groups, world.names.rows, world.names.search)
        let stream = try await world.events("resource=\(groups)&resource=\(rows)&resource=\(search)&\(search).q=swift&updates=patch")
        let ids = try await EventsStreamTests.announcements(stream, 3)
        var client = Client()
        while client.documents.count < 3 {
            let event = try await stream.next()
            #expect(event.type == "snapshot")
            try client.takeTagged(event)
        }

        world.groups.update { $0.groups[2].taskCount = 321 }
        try await world.reloadGroupsAndWait()
        let groupsPatch = try await stream.next()
        #expect(groupsPatch.type == "patch")
        #expect(groupsPatch.data == #"{"resource":"\#(groups)","patch":[{"op":"replace","path":"/2/taskCount","value":321}]}"#)
        #expect(try client.takeTagged(groupsPatch) == groups)
        let versions = CompositeVersions(groupsPatch.id)
        try await PatchStreamTests.expectCurrent(client.documents[groups], version: versions[groups], get: "/\(groups)", on: world.service)

        // Rows: loadMore adds a page's medias to one row, nothing else.
        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(ids[1].id)/triggers/loadMore?topic=b").status == 202)
        let rowsPatch = try await stream.next()
        #expect(rowsPatch.type == "patch")
        #expect(try client.takeTagged(rowsPatch) == rows)
        #expect(client.lastPatch.count == 2, "two medias added: \(rowsPatch.data)")
        #expect(JSONPatchApplier.sameValue(client.documents[rows]!, try JSON(parsing: Array(world.media.value.rowsJSON(loaded: ["b": 2]).utf8))))
        #expect(CompositeVersions(rowsPatch.id)[groups] == versions[groups], "the client still has the groups it had")

        // Search: a new query, its results as a patch naming the query.
        let answer = try await TestHTTP.request(port: world.service.port, "PUT", "/streams/\(ids[2].id)/inputs/q", body: Array("swift-".utf8))
        #expect(answer.status == 202)
        let searchPatch = try await stream.next()
        #expect(searchPatch.type == "patch")
        let tagged = try JSON(parsing: Array(searchPatch.data.utf8))
        #expect(tagged["inputs"] == .object([("q", .string("swift-"))]))
        #expect(try client.takeTagged(searchPatch) == search)
        try await PatchStreamTests.expectCurrent(client.documents[search], version: CompositeVersions(searchPatch.id)[search],
                                                  get: "/\(search)?q=swift-", on: world.service)
        stream.close()
        await world.stop()
    }

    @Test("/events resumed with its Last-Event-ID sends no document the client has; the next change is a patch from it")
    func eventsResume() async throws {
        let world = try await EventsWorld.start(names: .prefixed("patchresumed"))
        let (groups, rows) = (world.names.groups, world.names.rows)
        let query = "resource=\(groups)&resource=\(rows)&updates=patch"
        let first = try await world.events(query)
        _ = try await EventsStreamTests.announcements(first, 2)
        var client = Client()
        var lastID: String?
        while client.documents.count < 2 {
            let event = try await first.next()
            try client.takeTagged(event)
            lastID = event.id
        }
        first.close()
        #expect(try await world.untilNothingSubscribed())

        let before = world.upstream.requests.count
        let resumed = try await world.events(query, headers: [("Last-Event-ID", try #require(lastID))])
        let ids = try await EventsStreamTests.announcements(resumed, 2)
        #expect(await world.fetchedAgain(since: before))
        world.groups.update { $0.groups[1].name = "Renamed" }
        try await world.reloadGroupsAndWait()
        let groupsPatch = try await resumed.next()
        #expect(groupsPatch.type == "patch", "the first event after resuming is the change, as a patch: \(groupsPatch.type) \(groupsPatch.id ?? "") \(groupsPatch.data.prefix(400))")
        #expect(try client.takeTagged(groupsPatch) == groups)
        try await PatchStreamTests.expectCurrent(client.documents[groups], version: CompositeVersions(groupsPatch.id)[groups],
                                                  get: "/\(groups)", on: world.service)
        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(ids[1].id)/triggers/loadMore?topic=a").status == 202)
        let rowsPatch = try await resumed.next()
        #expect(rowsPatch.type == "patch")
        #expect(try client.takeTagged(rowsPatch) == rows)
        #expect(JSONPatchApplier.sameValue(client.documents[rows]!, try JSON(parsing: Array(world.media.value.rowsJSON(loaded: ["a": 2]).utf8))))
        resumed.close()
        await world.stop()
    }

    // MARK: - Views of their own

    @Test("GET /rows?updates=patch: each loadMore is a patch adding that row's new medias, until the last page")
    func rowsLoadMore() async throws {
        let media = Observed(MediaFixture(topics: ["a", "b", "c"], pages: 3, perPage: 3))
        let upstream = try await ScriptedUpstream.start { request in media.value.reply(to: request) ?? .json("{}", status: 404) }
        let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL))
        let stream = try await service.events("/rows?updates=patch")
        let announcement = try JSON(parsing: Array(try await stream.next().data.utf8))
        let id = try #require(announcement["id"]?.stringValue)
        var client = Client()
        try client.take(try await stream.next(type: "snapshot"), of: "rows")
        var loaded = ["a": 1, "b": 1, "c": 1]
        for topic in ["b", "a", "b"] {
            #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/loadMore?topic=\(topic)").status == 202)
            loaded[topic]! += 1
            let event = try await stream.next()
            #expect(event.type == "patch")
            try client.take(event, of: "rows")
            let index = ["a", "b", "c"].firstIndex(of: topic)!
            #expect(client.lastPatch.map { $0["op"] } == Array(repeating: .string("add"), count: 3))
            #expect(client.lastPatch.allSatisfy { $0["path"]?.stringValue?.hasPrefix("/\(index)/medias/") == true })
            #expect(JSONPatchApplier.sameValue(client.documents["rows"]!, try JSON(parsing: Array(media.value.rowsJSON(loaded: loaded).utf8))))
        }
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("GET /search?updates=patch: a new query's results are a patch from the previous results, by id")
    func searchInput() async throws {
        let upstream = try await ScriptedUpstream.start { request in SearchFixture.reply(to: request) ?? .json("{}", status: 404) }
        let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL, debounce: "50ms"))
        let stream = try await service.events("/search?q=swift&updates=patch")
        let id = try #require(try JSON(parsing: Array(try await stream.next().data.utf8))["id"]?.stringValue)
        var client = Client()
        try client.take(try await stream.next(type: "snapshot"), of: "search")
        // swift finds 3 repositories, swift-n one of them, nginx another one.
        for (query, operations) in [("swift-n", 2), ("swift", 2), ("nginx", nil)] as [(String, Int?)] {
            let answer = try await TestHTTP.request(port: service.port, "PUT", "/streams/\(id)/inputs/q", body: Array(query.utf8))
            #expect(answer.status == 202)
            let event = try await stream.next()
            try client.take(event, of: "search")
            if event.type == "patch", let operations { #expect(client.lastPatch.count == operations, "\(query): \(event.data)") }
            try await Self.expectCurrent(client.documents["search"], version: event.id, get: "/search?q=\(query)", on: service)
        }
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }
}

/// The versions in a `GET /events` event's id, `groups:<v>,rows:<v>`, by resource.
struct CompositeVersions {
    private var versions: [String: String] = [:]

    init(_ id: String?) {
        for entry in (id ?? "").split(separator: ",") {
            guard let colon = entry.lastIndex(of: ":") else { continue }
            versions[String(entry[..<colon])] = String(entry[entry.index(after: colon)...])
        }
    }

    subscript(resource: String) -> String? { versions[resource] }
}
