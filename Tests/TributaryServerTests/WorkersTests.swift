import TributaryServer
import Testing
import TributaryTesting

@Suite("Workers share one live pipeline per resource")
struct WorkersTests {
    @Test("subscribers on two workers share one upstream refresh; the last one leaving, anywhere, cancels it")
    func oneRefreshForAllWorkers() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 4))
        let hang = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            hang.value && request.path != "/groups" ? .hang : fixture.value.reply(to: request)!
        }
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "60s")
        let owner = try await ServiceHarness(yaml: yaml)
        let other = try await ServiceHarness(yaml: yaml, shares: owner.shares)
        #expect(other.shares === owner.shares)
        var streams: [SSEClient] = []
        for service in [owner, other, owner, other, owner, other] {
            let stream = try await service.events("/groups")
            #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON)
            streams.append(stream)
        }
        let lists = { upstream.requests.filter { $0.path == "/groups" }.count }
        #expect(lists() == 1)

        fixture.update { $0.groups[0].taskCount = 999 }
        #expect(try await other.post("/groups/reload").status == 202)   // reaches the owner's pipeline
        for stream in streams {
            #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON)
        }
        #expect(lists() == 2)

        hang.update { $0 = true }
        #expect(try await owner.post("/groups/reload").status == 202)
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 4 })
        for (index, stream) in streams.enumerated() where index % 2 == 0 { stream.close() }   // all of the owner's
        #expect(try await owner.get("/healthz").status == 200)
        #expect(upstream.requests.filter(\.inFlight).count == 4, "the other worker's subscribers keep it running")
        for (index, stream) in streams.enumerated() where index % 2 == 1 { stream.close() }
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.allSatisfy { !$0.inFlight } })
        await other.stop()
        await owner.stop()
        await upstream.shutdown()
    }

    @Test("a stream's triggers and inputs work through whichever worker the request reaches")
    func streamControlAcrossWorkers() async throws {
        let media = Observed(MediaFixture(topics: ["a", "b"]))
        let upstream = try await ScriptedUpstream.start { media.value.reply(to: $0) ?? SearchFixture.reply(to: $0) ?? .json("{}", status: 404) }
        let yaml = ServiceHarness.viewModelsYAML(upstream: upstream.baseURL, debounce: "10ms")
        let first = try await ServiceHarness(yaml: yaml)
        let second = try await ServiceHarness(yaml: yaml, shares: first.shares)
        let rows = try await first.events("/rows")
        let rowsID = try await rows.announcedID()
        _ = try await rows.next(type: "snapshot")
        let loadMore = try await TestHTTP.request(port: second.port, "POST", "/streams/\(rowsID)/triggers/loadMore?topic=b")
        #expect(loadMore.status == 202)
        #expect(try await rows.next(type: "snapshot").data == media.value.rowsJSON(loaded: ["b": 2]))
        let unknown = try await TestHTTP.request(port: second.port, "POST", "/streams/\(rowsID)/triggers/dance")
        #expect(unknown.status == 404)
        #expect(unknown.error?.code == "unknown_trigger")

        let search = try await second.events("/search?q=vapor")
        let searchID = try await search.announcedID()
        _ = try await search.next(type: "snapshot")
        #expect(try await TestHTTP.request(port: first.port, "PUT", "/streams/\(searchID)/inputs/q", body: Array("nginx".utf8)).status == 202)
        #expect(try await search.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "nginx"))

        do {
            let reload = try await TestHTTP.request(port: second.port, "POST", "/rows/reload")
            #expect(reload.status == 202)
            #expect(try await rows.next(type: "snapshot").data == media.value.rowsJSON(), "POST /rows/reload reached the stream on the other worker")
        }
        rows.close()
        search.close()
        await first.stop()
        await second.stop()
        await upstream.shutdown()
    }
}
