import Foundation
import Testing
import TributaryTesting

@Suite("GET /groups as server-sent events")
struct GroupsStreamTests {
    /// A tasks upstream whose data the test changes, counting list calls.
    struct World {
        let fixture: Observed<TaskGroupsFixture>
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(
            groups: Int = 5, nameLength: Int = 0, yaml extra: String = "", heartbeat: String = "15s"
        ) async throws -> World {
            var data = TaskGroupsFixture(count: groups)
            if nameLength > 0 {
                for index in data.groups.indices { data.groups[index].name = String(repeating: "n", count: nameLength) + "\(index)" }
            }
            let fixture = Observed(data)
            let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
            let service = try await ServiceHarness(
                yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: extra, heartbeat: heartbeat))
            return World(fixture: fixture, upstream: upstream, service: service)
        }

        var listCalls: Int { upstream.requests.filter { $0.path == "/groups" }.count }

        func changeTaskCount(of index: Int, to count: Int) {
            fixture.update { $0.groups[index].taskCount = count }
        }

        /// Reloads and waits until the refresh's upstream calls are all answered.
        func reloadAndWaitForRefresh() async throws {
            let before = upstream.requests.count
            let groups = fixture.value.groups.count
            #expect(try await service.post("/groups/reload").status == 202)
            #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
                records.count >= before + 1 + groups && records.allSatisfy { !$0.inFlight }
            })
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("the stream opens with headers, retry, and a stream event, then a snapshot with an id")
    func preambleAndSnapshot() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/groups")
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Content-Type") == "text/event-stream")
        #expect(stream.head.header("Cache-Control") == "no-cache")
        #expect(stream.head.header("X-Accel-Buffering") == "no")
        let announcement = try await stream.next()
        #expect(announcement.type == "stream")
        #expect(stream.parser.retry == 1500)
        #expect(stream.parser.log.prefix(2) == ["retry", "event"])
        let stream32 = try #require(try JSONSerialization.jsonObject(with: Data(announcement.data.utf8)) as? [String: Any])
        #expect((stream32["id"] as? String)?.count == 32)
        #expect(stream32["triggers"] as? [String] == ["reload"])
        let snapshot = try await stream.next()
        #expect(snapshot.type == "snapshot")
        #expect(snapshot.id?.count == 16)
        #expect(snapshot.data == world.fixture.value.mergedJSON)
        stream.close()
        await world.stop()
    }

    @Test("a reload after a change sends a new snapshot with a new id; a reload without change sends nothing")
    func reloadAndDedupe() async throws {
        let world = try await World.start()
        let stream = try await world.service.events("/groups")
        let first = try await stream.next(type: "snapshot")

        try await world.reloadAndWaitForRefresh()          // nothing changed: nothing is sent
        world.changeTaskCount(of: 2, to: 4242)
        try await world.reloadAndWaitForRefresh()
        let second = try await stream.next()
        #expect(second.type == "snapshot", "the unchanged refresh must not have produced an event")
        #expect(second.data == world.fixture.value.mergedJSON)
        #expect(second.id != first.id)
        stream.close()
        await world.stop()
    }

    @Test("Last-Event-ID equal to the current version skips resending that snapshot")
    func lastEventID() async throws {
        let world = try await World.start()
        let first = try await world.service.events("/groups")
        let version = try #require(try await first.next(type: "snapshot").id)
        first.close()

        let resumed = try await world.service.events("/groups", headers: [("Last-Event-ID", version)])
        #expect(try await resumed.next().type == "stream")
        world.changeTaskCount(of: 0, to: 99)
        try await world.reloadAndWaitForRefresh()
        let next = try await resumed.next()
        #expect(next.type == "snapshot")
        #expect(next.data == world.fixture.value.mergedJSON, "the first snapshot after resuming is the changed one")
        resumed.close()
        await world.stop()
    }

    @Test("20 subscribers share one pipeline: one upstream refresh for all of them")
    func sharedPipeline() async throws {
        let world = try await World.start()
        var streams: [SSEClient] = []
        for _ in 0..<20 {
            let stream = try await world.service.events("/groups")
            #expect(try await stream.next(type: "snapshot").data == world.fixture.value.mergedJSON)
            streams.append(stream)
        }
        #expect(world.listCalls == 1)
        world.changeTaskCount(of: 1, to: 77)
        try await world.reloadAndWaitForRefresh()
        for stream in streams {
            #expect(try await stream.next(type: "snapshot").data == world.fixture.value.mergedJSON)
        }
        #expect(world.listCalls == 2)
        for stream in streams { stream.close() }
        await world.stop()
    }

    @Test("the last subscriber leaving cancels the shared pipeline and its upstream calls; one leaving does not")
    func lastSubscriberCancels() async throws {
        let hang = Observed(false)
        let fixture = TaskGroupsFixture(count: 4)
        let upstream = try await ScriptedUpstream.start { request in
            request.path != "/groups" && hang.value ? .hang : fixture.reply(to: request)!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "60s"))
        let first = try await service.events("/groups")
        let second = try await service.events("/groups")
        _ = try await first.next(type: "snapshot")
        _ = try await second.next(type: "snapshot")
        hang.update { $0 = true }
        #expect(try await service.post("/groups/reload").status == 202)
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 4 })

        first.close()
        // The other subscriber keeps the refresh alive: a request on a fresh connection
        // proves the server handled the close before we look.
        #expect(try await service.get("/healthz").status == 200)
        #expect(upstream.requests.filter(\.inFlight).count == 4)

        second.close()
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.allSatisfy { !$0.inFlight } })
        #expect(upstream.requests.filter { $0.closedByClient }.count == 4)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("an upstream failure is an error event; the stream stays open and recovers on the next refresh")
    func errorAndRecovery() async throws {
        let failing = Observed(false)
        let fixture = TaskGroupsFixture(count: 3)
        let upstream = try await ScriptedUpstream.start { request in
            failing.value ? .json(#"{"down":true}"#, status: 500) : fixture.reply(to: request)!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let stream = try await service.events("/groups")
        let first = try await stream.next(type: "snapshot")
        failing.update { $0 = true }
        #expect(try await service.post("/groups/reload").status == 202)
        let error = try await stream.next()
        #expect(error.type == "error")
        #expect(error.data.contains(#""code":"upstream_status""#))
        #expect(error.data.contains("upstream tasks"))
        failing.update { $0 = false }
        #expect(try await service.post("/groups/reload").status == 202)
        let recovered = try await stream.next()
        #expect(recovered.type == "snapshot")
        #expect(recovered.id == first.id, "unchanged data, sent again so the client knows it is current")
        #expect(recovered.data == fixture.mergedJSON)
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("quiet streams get heartbeat comments")
    func heartbeats() async throws {
        let world = try await World.start(heartbeat: "50ms")
        let stream = try await world.service.events("/groups")
        _ = try await stream.next(type: "snapshot")
        #expect(try await stream.nextComment() == " heartbeat")
        #expect(try await stream.nextComment() == " heartbeat")
        stream.close()
        await world.stop()
    }

    @Test("a subscriber that stops reading gets the latest snapshot when it catches up, not every one it missed")
    func slowSubscriberGetsLatest() async throws {
        let world = try await World.start(groups: 150, nameLength: 2000)
        let slow = try await world.service.events("/groups", receiveBuffer: 4096)
        _ = try await slow.next(type: "stream")
        // Do not read: ten ~300 KB snapshots meet a full socket (the service caps its send
        // buffer for streams, the client reads through a 4 KB window).
        for round in 1...10 {
            world.changeTaskCount(of: 0, to: 1000 + round)
            try await world.reloadAndWaitForRefresh()
        }
        // Catch up: read until the latest state arrives (a read waiting 10 s means it never will).
        slow.connection.setTimeout(.seconds(10))
        let latest = world.fixture.value.mergedJSON
        var snapshots: [ServerSentEvent] = []
        while snapshots.last?.data != latest, let event = try? await slow.next(type: "snapshot") { snapshots.append(event) }
        #expect(snapshots.last?.data == latest)
        #expect(snapshots.count <= 3, "\(snapshots.count) snapshots: missed states were queued instead of conflated")
        slow.close()
        await world.stop()
    }
}
