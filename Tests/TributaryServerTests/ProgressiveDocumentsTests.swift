import Aggregation
import EventLoop
import HTTPCore
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("progressive=true: a live pipeline's first document as soon as the list is known, then its details as they arrive")
struct ProgressiveDocumentsTests {
    /// Five groups whose third one's details are held until ``release()``; every other call
    /// answers at once.
    struct World {
        let fixture: TaskGroupsFixture
        let released: Observed<Bool>
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(groups: Int = 5, yaml extra: String = "") async throws -> World {
            let fixture = TaskGroupsFixture(count: groups)
            let slow = fixture.groups[2].id
            let released = Observed(false)
            let upstream = try await ScriptedUpstream.start { request in
                guard let reply = fixture.reply(to: request) else { return .json("{}", status: 404) }
                if fixture.group(forMetadataPath: request.path)?.id == slow { return reply.held { _ in released.value } }
                return reply
            }
            let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: extra, timeout: "60s"))
            return World(fixture: fixture, released: released, upstream: upstream, service: service)
        }

        var slowID: String { fixture.groups[2].id }

        /// The slow group's details answer now.
        func release() async throws {
            released.update { $0 = true }
            try await upstream.releaseHeld()
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    /// The ids of `document`'s items marked pending by `marker`.
    static func pending(_ document: JSON, marker: String = "pending") -> [String] {
        (document.arrayValue ?? []).filter { $0[marker] == .bool(true) }.compactMap { $0["id"]?.stringValue }
    }

    /// Reads snapshots until one has only the slow group pending (the others' details arrive
    /// at once), checking each on the way: every item either pending with its list members
    /// only, or complete. At most 8: arrivals within the window go as one event.
    static func untilOnlySlowPending(_ stream: SSEClient, _ world: World, first: ServerSentEvent) async throws -> JSON {
        var event = first
        for _ in 0..<8 {
            let document = try JSON(parsing: Array(event.data.utf8))
            let items = try #require(document.arrayValue)
            #expect(items.count == world.fixture.groups.count)
            for (index, item) in items.enumerated() {
                let group = world.fixture.groups[index]
                if item["pending"] == .bool(true) {
                    let listed = #"{"id":"# + JSONWriter.string(group.id) + #","name":"# + JSONWriter.string(group.name) + #","pending":true}"#
                    #expect(item.serialized == Array(listed.utf8))
                } else {
                    #expect(item.serialized == Array(world.fixture.mergedJSON(of: group).utf8))
                }
            }
            #expect(pending(document).contains(world.slowID), "the slow group is pending until released")
            if pending(document) == [world.slowID] { return document }
            event = try await stream.next(type: "snapshot")
        }
        Issue.record("after 8 snapshots, still pending: \(event.data)")
        return .null
    }

    @Test("the first snapshot comes with the slow item pending; the last is complete, the JSON GET's document and version")
    func firstAndLast() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/groups?progressive=true")
        _ = try await Self.untilOnlySlowPending(stream, world, first: try await stream.next(type: "snapshot"))
        try await world.release()
        let complete = try await stream.next(type: "snapshot")
        #expect(complete.data == world.fixture.mergedJSON)
        let answer = try await world.service.get("/groups")
        #expect(answer.text == complete.data)
        #expect(answer.header("ETag") == "\"\(try #require(complete.id))\"")
        stream.close()
        await world.stop()
    }

    @Test("a stream without progressive on the same pipeline waits for the complete document; one call per detail for both")
    func sharedWithOthers() async throws {
        let world = try await World.start()
        let progressive = try await world.service.events("/groups?progressive=true")
        _ = try await Self.untilOnlySlowPending(progressive, world, first: try await progressive.next(type: "snapshot"))
        // Joins the pipeline while its document is partial.
        let whole = try await world.service.events("/groups")
        _ = try await whole.next(type: "stream")
        try await world.release()
        #expect(try await whole.next(type: "snapshot").data == world.fixture.mergedJSON)
        #expect(try await progressive.next(type: "snapshot").data == world.fixture.mergedJSON)
        let paths = world.upstream.requests.map(\.path)
        #expect(paths.filter { $0 == "/groups" }.count == 1)
        #expect(paths.count == 1 + 5, "the list, then each detail once: \(paths)")
        progressive.close()
        whole.close()
        await world.stop()
    }

    @Test("with updates=patch the rest arrives as patches that drop the marker and add the details; applied, they give the JSON GET")
    func patches() async throws {
        // Twenty groups: one item's arrival is a patch much smaller than the document. (The
        // arrival of many at once may be a snapshot: a patch is never larger than the document.)
        let world = try await World.start(groups: 20)
        let stream = try await world.service.events("/groups?progressive=true&updates=patch")
        var client = PatchStreamTests.Client()
        try client.take(try await stream.next(type: "snapshot"), of: "groups")
        while Self.pending(try #require(client.documents["groups"])) != [world.slowID] {
            try client.take(try await stream.next(), of: "groups")
        }
        try await world.release()
        let last = try await stream.next()
        #expect(last.type == "patch")
        try client.take(last, of: "groups")
        #expect(client.lastPatch.contains { $0["op"]?.stringValue == "remove" && $0["path"]?.stringValue == "/2/pending" })
        try await PatchStreamTests.expectCurrent(client.documents["groups"], version: last.id, get: "/groups", on: world.service)
        stream.close()
        await world.stop()
    }

    @Test("a Last-Event-ID naming a partial document gets the complete one as a snapshot")
    func resumeFromPartial() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/groups?progressive=true&updates=patch")
        let partial = try await stream.next(type: "snapshot")
        try await world.release()
        let complete = try #require(try await world.service.get("/groups").header("ETag"))
        while try await stream.next().id.map({ "\"\($0)\"" }) != complete {}
        stream.close()
        let resumed = try await world.service.events("/groups?updates=patch", headers: [("Last-Event-ID", try #require(partial.id))])
        let event = try await resumed.next()
        #expect(event.type == "stream")
        let document = try await resumed.next()
        #expect(document.type == "snapshot")
        #expect(document.data == world.fixture.mergedJSON)
        resumed.close()
        await world.stop()
    }

    @Test("GET /events takes progressive for every list resource; fields keep the marker; the marker can be renamed")
    func eventsFieldsAndMarker() async throws {
        let world = try await World.start(yaml: "pendingMember: waiting")
        let stream = try await world.service.events("/events?resource=groups&progressive=true&groups.fields=name")
        let first = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        let items = try #require(first["data"]?.arrayValue)
        let slow = try #require(items.indices.contains(2) ? items[2] : nil)
        #expect(slow.serialized == Array(#"{"name":\#(JSONWriter.string(world.fixture.groups[2].name)),"waiting":true}"#.utf8))
        #expect(items.allSatisfy { $0["pending"] == nil })
        try await world.release()
        var data = first["data"]
        while (data?.arrayValue ?? []).contains(where: { $0["waiting"] == .bool(true) }) {
            data = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))["data"]
        }
        #expect(data?.serialized == Array(try await world.service.get("/groups?fields=name").body))
        stream.close()
        await world.stop()
    }

    @Test("batched details arrive per batch: the batch holding the slow item keeps its items pending until it answers")
    func batched() async throws {
        let fixture = TaskGroupsFixture(count: 6)
        let slow = fixture.groups[4].id
        let released = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            guard let reply = fixture.reply(to: request) else { return .json("{}", status: 404) }
            if request.path == "/groups/metadata", TaskGroupsFixture.batchIDs(of: request).contains(slow) {
                return reply.held { _ in released.value }
            }
            return reply
        }
        let yaml = BatchedGroupsTests.yaml(
            upstream: upstream.baseURL, batch: "{path: /groups/metadata, parameter: ids, style: comma, max: 3, items: result, id: id}")
        let service = try await ServiceHarness(yaml: yaml)
        let stream = try await service.events("/batched?progressive=true")
        var document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        // The first batch (items 0–2) answers; the second (3–5, the slow one among them) is held.
        let secondBatch = Set(fixture.groups[3...].map(\.id))
        while Set(Self.pending(document)) != secondBatch {
            #expect(secondBatch.isSubset(of: Self.pending(document)), "the held batch's items stay pending together")
            document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        }
        released.update { $0 = true }
        try await upstream.releaseHeld()
        #expect(try await stream.next(type: "snapshot").data == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path == "/groups/metadata" }.count == 2)
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("an item whose details fail under onItemFailure: fail ends the document in an error event; the stream stays open")
    func failingItem() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let slow = fixture.groups[1].id
        let released = Observed(false)
        let failing = Observed(true)
        let upstream = try await ScriptedUpstream.start { request in
            if failing.value, fixture.group(forMetadataPath: request.path)?.id == slow {
                return UpstreamReply.json(#"{"e":1}"#, status: 500).held { _ in released.value }
            }
            return fixture.reply(to: request) ?? .json("{}", status: 404)
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "onItemFailure: fail", timeout: "60s"))
        let stream = try await service.events("/groups?progressive=true")
        var document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        while Self.pending(document) != [slow] {
            document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        }
        released.update { $0 = true }
        try await upstream.releaseHeld()
        let error = try await stream.next()
        #expect(error.type == "error")
        #expect(error.data.contains(#""code":"upstream_status""#), "\(error.data)")
        // Still open: a reload with the upstream healthy brings the complete document.
        failing.update { $0 = false }
        #expect(try await service.post("/groups/reload").status == 202)
        var last = try await stream.next(type: "snapshot")
        while last.data != fixture.mergedJSON {
            #expect(Self.pending(try JSON(parsing: Array(last.data.utf8))).count > 0, "partial until complete: \(last.data)")
            last = try await stream.next(type: "snapshot")
        }
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("the demo's --slow-detail holds its third group's details: a progressive stream shows that group pending, the others whole")
    func demoSlowDetail() async throws {
        let thread = try LoopThread()
        let demo = try await thread.run { loop in
            // Longer than any test: the group stays pending for as long as the test looks.
            let demo = try DemoUpstream(loop: loop, slowDetail: .seconds(3600))
            return (try demo.bind(ListenAddress(host: "127.0.0.1", port: 0)), LoopBound(demo, loop: loop))
        }
        let shipped = ShippedConfiguration.yaml.replacingOccurrences(of: "http://127.0.0.1:8081", with: "http://127.0.0.1:\(demo.0)")
        let service = try await ServiceHarness(yaml: shipped)
        let stream = try await service.events("/groups?progressive=true")
        var document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        let slow = try #require(document.arrayValue?[DemoUpstream.slowGroupIndex]["id"]?.stringValue)
        while Self.pending(document) != [slow] {
            document = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
        }
        #expect(document.arrayValue?.filter { $0["taskCount"] != nil }.count == (document.arrayValue?.count ?? 0) - 1)
        stream.close()
        await service.stop()
        await thread.stop { demo.1.release() }
    }

    @Test("progressive is true or false: any other value is 400 invalid_parameter, on a stream, /events and a JSON GET")
    func refused() async throws {
        let world = try await World.start()
        for path in ["/groups?progressive=yes", "/events?resource=groups&progressive=1"] {
            let stream = try await world.service.events(path)
            #expect(stream.head.status == 400, "\(path)")
            stream.close()
        }
        let answer = try await world.service.get("/groups?progressive=maybe")
        #expect(answer.status == 400)
        #expect(try JSON(parsing: answer.body)["error"]?["message"]?.stringValue == "progressive must be one of: true, false")
        #expect(world.upstream.requests.isEmpty)
        await world.stop()
    }
}
