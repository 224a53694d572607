import Aggregation
@testable import TributaryServer
import Testing
import TributaryTesting

@Suite("Workers are alike: one live pipeline per key, run by the worker its key falls to")
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
        #expect(try await other.post("/groups/reload").status == 202)   // reaches the pipeline, wherever it runs
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

    @Test("shared pipelines spread over the workers by key: each runs on one, its calls from that worker's client, every worker following it")
    func pipelinesSpreadByKey() async throws {
        let upstream = try await AimedReloadTests.TeamsUpstream()
        let yaml = AimedReloadTests.yaml(upstream: upstream.server.baseURL)
        let first = try await ServiceHarness(yaml: yaml)
        let second = try await ServiceHarness(yaml: yaml, shares: first.shares)
        let teams = (0..<8).map { "t\($0)" }
        var streams: [SSEClient] = []
        for team in teams {
            for service in [first, second] {
                let stream = try await service.events("/teams/\(team)/groups")
                #expect(try await stream.next(type: "snapshot").data == AimedReloadTests.TeamsUpstream.groups(team, version: 1))
                streams.append(stream)
            }
        }
        let loops = [try await first.withWorker { $0.loop }, try await second.withWorker { $0.loop }]
        let runners = first.shares.pipelines.runners(of: "groups")
        #expect(runners.count == teams.count, "one pipeline per team, whichever worker its streams are on")
        let byWorker = loops.map { loop in Set(runners.filter { $0.loop === loop }.compactMap { $0.parameters["team"] }) }
        #expect(byWorker.allSatisfy { !$0.isEmpty }, "both workers run pipelines: \(byWorker)")
        #expect(byWorker[0].union(byWorker[1]) == Set(teams))
        for team in teams { #expect(upstream.lists("groups", of: team) == 1) }

        // Each pipeline's calls leave from its own worker's connections: the two workers'
        // pipelines never shared a connection to the upstream.
        let ports = byWorker.map { teams in
            Set(upstream.server.requests.filter { request in
                let segments = ParameterizedResourceTests.Teams.parts(of: request.uri).segments
                return segments.count >= 2 && teams.contains(segments[1])
            }.map(\.clientPort))
        }
        #expect(ports[0].isDisjoint(with: ports[1]))

        for stream in streams { stream.close() }
        let shares = first.shares
        #expect(await BoundedClientsTests.eventually { shares.pipelines.count(of: "groups") == 0 })
        await second.stop()
        await first.stop()
        await upstream.server.shutdown()
    }

    @Test("the same key falls to the same worker in every process; keys spread evenly")
    func spreadIsStableAndEven() {
        let keys = (0..<1000).map { SharingKey(resource: "groups", parameters: ParameterValues(["team": "t\($0)"]), identity: .anonymous) }
        for count in [2, 3, 4] {
            var perWorker = Array(repeating: 0, count: count)
            for key in keys { perWorker[LivePipelines.spread(key, over: count)] += 1 }
            #expect(perWorker.allSatisfy { $0 > 1000 / count * 8 / 10 }, "\(perWorker)")
        }
        // FNV-1a of the key's canonical text: fixed, not Swift's per-process seed.
        #expect(LivePipelines.spread(keys[0], over: 1_000_003) == LivePipelines.spread(keys[0], over: 1_000_003))
        #expect(keys.map { LivePipelines.spread($0, over: 2) } == keys.map { LivePipelines.spread($0, over: 2) })
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
