import Foundation
import Testing
import TributaryTesting
import TributaryConfiguration

/// `SIGHUP` to the real process: the configuration file is read again and applied by every
/// worker, and the live streams follow what happened to their resource (docs/operations.md, "Reloading
/// the configuration"). Each test waits for the reload's own log line, never for time.
@Suite("Configuration reload on SIGHUP")
struct ConfigurationReloadTests {
    /// The tasks upstream and `kind: list` resources over it, each refreshed only when asked
    /// (`refreshInterval` long, unless `refreshIntervals` says otherwise), so every snapshot a
    /// stream gets is one the test caused.
    static func yaml(
        upstream: String, workers: Int = 2, resources: [String], refreshIntervals: [String: String] = [:], heartbeat: String = "15s",
        poolSize: Int = 64
    ) -> String {
        var yaml = """
            server:
              workers: \(workers)
            sse:
              heartbeat: \(heartbeat)
            upstreams:
              tasks: {url: "\(upstream)", timeout: 10s, retries: 0, poolSize: \(poolSize)}
            resources:

            """
        for name in resources {
            yaml += """
                  \(name):
                    kind: list
                    upstream: tasks
                    list: {path: /groups, items: result, id: id}
                    details: {path: "/groups/{id}/metadata", value: result}
                    refreshInterval: \(refreshIntervals[name] ?? "60s")

                """
        }
        return yaml
    }

    /// The id an `event: stream` announces.
    static func streamID(_ event: ServerSentEvent) -> String? {
        event.data.firstMatch(of: /"id":"([0-9a-f]+)"/).map { String($0.1) }
    }

    /// Waits until the service's log says `line` `count` times.
    /// The stream `id` still follows its live pipeline: after a change upstream, its reload
    /// trigger is taken (202) and the next event is the new document, no error, no new stream.
    static func expectStillUpdates(
        _ stream: SSEClient, id: String, service: ServiceProcess, fixture: Observed<TaskGroupsFixture>
    ) async throws {
        fixture.update { $0.groups[0].taskCount += 1 }
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/reload").status == 202)
        let update = try await stream.next()
        #expect(update.type == "snapshot", "no error and no new stream event: \(update)")
        #expect(update.data == fixture.value.mergedJSON)
    }

    static func awaitLog(_ service: ServiceProcess, _ line: String, count: Int = 1) async -> Bool {
        await service.output.wait(timeout: .seconds(20)) { $0.components(separatedBy: line).count - 1 >= count }
    }

    /// The value of the counter `tributary_config_reloads_total{result}` in `metrics`.
    static func reloads(_ result: String, in metrics: String) -> Int? {
        metrics.split(separator: "\n")
            .first { $0.hasPrefix(#"tributary_config_reloads_total{result=""# + result + #""} "#) }
            .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
            .map { Int($0) }
    }

    @Test("a valid change, two workers: a new resource answers, an unchanged resource's stream keeps its connection, id and updates")
    func validChange() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL, resources: ["groups"]))
        let stream = try await SSEClient(port: service.port, path: "/groups")
        let id = try #require(Self.streamID(try await stream.next(type: "stream")))
        #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON)
        #expect(try await TestHTTP.get(port: service.port, "/teams").status == 404)

        try service.reload(Self.yaml(upstream: upstream.baseURL, resources: ["groups", "teams"]))
        #expect(await Self.awaitLog(service, "configuration reloaded"))
        #expect(service.output.value.contains("added=teams changed=none removed=none"))

        // Fresh connections: SO_REUSEPORT spreads them over both workers, each of which must
        // have mounted the new resource.
        for _ in 0..<8 {
            let answer = try await TestHTTP.get(port: service.port, "/teams")
            #expect(answer.status == 200)
            #expect(answer.text == fixture.value.mergedJSON)
        }
        let teams = try await SSEClient(port: service.port, path: "/events?resource=teams")
        #expect(teams.head.status == 200)
        #expect(try await teams.next(type: "snapshot").data.contains(#""resource":"teams""#))
        teams.close()
        #expect(try await TestHTTP.get(port: service.port, "/openapi.json").text.contains(#""/teams""#))

        // The stream opened before the reload: same connection, same id, still live.
        try await Self.expectStillUpdates(stream, id: id, service: service, fixture: fixture)

        let metrics = try await TestHTTP.get(port: service.port, "/metrics").text
        #expect(Self.reloads("ok", in: metrics) == 1)
        #expect(Self.reloads("error", in: metrics) == 0)
        stream.close()
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("a removed resource: its stream ends with resource_removed, its feed on /events ends while the rest goes on, its URL is 404")
    func removedResource() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL, resources: ["groups", "extra"]))
        let single = try await SSEClient(port: service.port, path: "/extra")
        _ = try await single.next(type: "snapshot")
        let multi = try await SSEClient(port: service.port, path: "/events?resource=groups&resource=extra")
        let groupsID = try #require(Self.streamID(try await multi.next(type: "stream")))
        let extraID = try #require(Self.streamID(try await multi.next(type: "stream")))
        _ = try await multi.next(type: "snapshot")
        _ = try await multi.next(type: "snapshot")

        try service.reload(Self.yaml(upstream: upstream.baseURL, resources: ["groups"]))
        let ended = try await single.next()
        #expect(ended.type == "error")
        #expect(ended.data.contains(#""code":"resource_removed""#))
        #expect(try await single.readToEnd().isEmpty, "the stream ends after its error, cleanly")
        let feedEnded = try await multi.next()
        #expect(feedEnded.type == "error")
        #expect(feedEnded.data.contains(#""resource":"extra""#))
        #expect(feedEnded.data.contains(#""code":"resource_removed""#))
        #expect(await Self.awaitLog(service, "configuration reloaded"))

        // The rest of the /events stream goes on, and its remaining feed answers its controls.
        fixture.update { $0.groups[1].name = "renamed" }
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(groupsID)/triggers/reload").status == 202)
        let update = try await multi.next()
        #expect(update.type == "snapshot")
        #expect(update.data.contains(#""resource":"groups""#) && update.data.contains("renamed"))
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(extraID)/triggers/reload").status == 404)
        for _ in 0..<6 {
            #expect(try await TestHTTP.get(port: service.port, "/extra").status == 404)
        }
        #expect(try await TestHTTP.get(port: service.port, "/events?resource=extra").status == 404)
        multi.close()
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("a changed resource: its streams end with resource_changed (a whole /events stream too); a restart-only setting is kept and named")
    func changedResource() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL, workers: 1, resources: ["groups", "teams"]))
        let single = try await SSEClient(port: service.port, path: "/groups")
        let oldID = try #require(Self.streamID(try await single.next(type: "stream")))
        _ = try await single.next(type: "snapshot")
        let multi = try await SSEClient(port: service.port, path: "/events?resource=teams&resource=groups")
        _ = try await multi.next(type: "snapshot")
        _ = try await multi.next(type: "snapshot")
        let untouched = try await SSEClient(port: service.port, path: "/teams")
        let teamsID = try #require(Self.streamID(try await untouched.next(type: "stream")))
        _ = try await untouched.next(type: "snapshot")

        try service.reload(Self.yaml(
            upstream: upstream.baseURL, workers: 1, resources: ["groups", "teams"], refreshIntervals: ["groups": "30s"], heartbeat: "5s"))
        let ended = try await single.next()
        #expect(ended.type == "error")
        #expect(ended.data.contains(#""code":"resource_changed""#))
        #expect(try await single.readToEnd().isEmpty)
        let multiEnded = try await multi.next()
        #expect(multiEnded.type == "error" && multiEnded.data.contains(#""resource":"groups""#))
        #expect(multiEnded.data.contains(#""code":"resource_changed""#))
        #expect(try await multi.readToEnd().isEmpty, "the whole /events stream ends, so its client reconnects to the new definition")
        #expect(await Self.awaitLog(service, "configuration reloaded"))
        #expect(service.output.value.contains("added=none changed=groups removed=none"))
        #expect(service.output.value.contains("need a restart"))
        #expect(service.output.value.contains("keys=sse"))

        // A reconnect gets the new definition's stream; the old id is gone; /teams goes on.
        let reconnected = try await SSEClient(port: service.port, path: "/groups")
        #expect(try #require(Self.streamID(try await reconnected.next(type: "stream"))) != oldID)
        #expect(try await reconnected.next(type: "snapshot").data == fixture.value.mergedJSON)
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(oldID)/triggers/reload").status == 404)
        fixture.update { $0.groups[0].taskCount += 1 }
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(teamsID)/triggers/reload").status == 202)
        #expect(try await untouched.next().type == "snapshot")
        reconnected.close()
        untouched.close()
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("an invalid file changes nothing: the error names the key, is counted, and the running configuration serves on")
    func invalidFile() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let valid = Self.yaml(upstream: upstream.baseURL, resources: ["groups"])
        let service = try await ServiceProcess(yaml: valid)
        let stream = try await SSEClient(port: service.port, path: "/groups")
        let id = try #require(Self.streamID(try await stream.next(type: "stream")))
        _ = try await stream.next(type: "snapshot")

        let unknownUpstream = valid + """
              broken:
                kind: list
                upstream: nowhere
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}

            """
        try service.reload(unknownUpstream)
        #expect(await Self.awaitLog(service, "configuration reload failed"))
        #expect(service.output.value.contains("resources.broken.upstream"))
        try service.reload(valid + "  groups: [unclosed\n")
        #expect(await Self.awaitLog(service, "configuration reload failed", count: 2))
        try service.reload(valid.replacingOccurrences(of: "refreshInterval: 60s", with: "refreshInterval: soon"))
        #expect(await Self.awaitLog(service, "configuration reload failed", count: 3))
        #expect(service.output.value.contains("resources.groups.refreshInterval"))
        // A number past its range: once, `interval * burst` trapped the whole process here.
        try service.reload(valid.replacingOccurrences(of: "server:\n", with: "server:\n  rateLimit: {rate: 1/h, burst: 3000000000}\n"))
        #expect(await Self.awaitLog(service, "configuration reload failed", count: 4))
        #expect(service.output.value.contains("server.rateLimit.burst: expected a whole number from 1 to 1000000"))

        let metrics = try await TestHTTP.get(port: service.port, "/metrics").text
        #expect(Self.reloads("error", in: metrics) == 4)
        #expect(Self.reloads("ok", in: metrics) == 0)
        #expect(!service.output.value.contains("configuration reloaded"))
        #expect(try await TestHTTP.get(port: service.port, "/broken").status == 404)
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.value.mergedJSON)
        try await Self.expectStillUpdates(stream, id: id, service: service, fixture: fixture)
        stream.close()
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("a changed poolSize: the connection pool follows it in place, and the resource's stream goes on")
    func poolFollows() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 6))
        let upstream = try await ScriptedUpstream.start { request in
            fixture.value.reply(to: request, delay: request.path == "/groups" ? .zero : .milliseconds(50))!
        }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL, workers: 1, resources: ["groups"], poolSize: 1))
        let stream = try await SSEClient(port: service.port, path: "/groups")
        let id = try #require(Self.streamID(try await stream.next(type: "stream")))
        _ = try await stream.next(type: "snapshot")
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.value.mergedJSON)
        let before = upstream.requests.count
        #expect(upstream.requests.maxInFlight == 1, "one connection")

        try service.reload(Self.yaml(upstream: upstream.baseURL, workers: 1, resources: ["groups"], poolSize: 4))
        #expect(await Self.awaitLog(service, "configuration reloaded"))
        #expect(service.output.value.contains("added=none changed=none removed=none"), "pool limits alone change no resource")
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.value.mergedJSON)
        let after = Array(upstream.requests.dropFirst(before))
        #expect(after.maxInFlight > 1 && after.maxInFlight <= 4, "up to four connections now: \(after.maxInFlight)")

        try await Self.expectStillUpdates(stream, id: id, service: service, fixture: fixture)
        stream.close()
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("a removed upstream: its origin's idle connections close at once; another origin's are reused")
    func removedUpstreamConnectionsClose() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 1))
        let tasks = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let body = #"{"items":[{"name":"a"}]}"#
        let search = try RawUpstream.start { _ in
            .send(Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
        }
        defer { search.stop() }
        // One worker: the requests after the reload find the tasks connections it pooled.
        let withSearch = Self.yaml(upstream: tasks.baseURL, workers: 1, resources: ["groups"])
            .replacingOccurrences(of: "upstreams:\n", with: "upstreams:\n  search: {url: \"\(search.baseURL)\", retries: 0}\n")
            + "  search: {kind: search, upstream: search, path: /search, items: items}\n"
        let service = try await ServiceProcess(yaml: withSearch)
        #expect(try await TestHTTP.get(port: service.port, "/search?q=abcd").text == #"[{"name":"a"}]"#)
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.value.mergedJSON)
        #expect(search.connections.value == 1)
        #expect(search.closed.value.isEmpty, "kept alive, idle in its pool")
        let tasksPorts = Set(tasks.requests.map(\.clientPort))

        try service.reload(Self.yaml(upstream: tasks.baseURL, workers: 1, resources: ["groups"]))
        #expect(await Self.awaitLog(service, "configuration reloaded"))
        #expect(await search.closed.wait(timeout: .seconds(5)) { $0 == [0] }, "the removed origin's idle connection is closed")
        #expect(try await TestHTTP.get(port: service.port, "/search?q=abcd").status == 404)
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.value.mergedJSON)
        let after = Set(tasks.requests.suffix(2).map(\.clientPort))
        #expect(after.isSubset(of: tasksPorts), "the tasks origin's pooled connections are reused: \(after) of \(tasksPorts)")
        #expect(await service.terminate() == 0)
        await tasks.shutdown()
    }

    @Test("in a fleet: a removed resource's lease is given back, a new one is adopted and led, two workers")
    func fleet() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL, resources: ["groups", "extra"]), arguments: ["--redis", redis.url],
            environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret])
        #expect(await TestHTTP.ready(port: service.port), "in the fleet")
        let extra = try await SSEClient(port: service.port, path: "/extra")
        _ = try await extra.next(type: "snapshot")
        #expect(await Self.awaitLog(service, "cluster: leading"))

        try service.reload(Self.yaml(upstream: upstream.baseURL, resources: ["groups", "teams"]))
        let ended = try await extra.next()
        #expect(ended.type == "error" && ended.data.contains(#""code":"resource_removed""#))
        #expect(try await extra.readToEnd().isEmpty)
        #expect(await Self.awaitLog(service, "configuration reloaded"))
        #expect(!service.output.value.contains("need a restart"), "the same --redis: the cluster settings did not change")

        let teams = try await SSEClient(port: service.port, path: "/teams")
        #expect(try await teams.next(type: "snapshot").data == fixture.value.mergedJSON)
        #expect(await Self.awaitLog(service, "cluster: leading", count: 2))
        #expect(service.output.value.contains("resource=teams [Fleet] cluster: leading"))
        let metrics = try await TestHTTP.get(port: service.port, "/metrics").text
        #expect(metrics.contains(#"tributary_cluster_lease_held{resource="teams"} 1"#))
        #expect(metrics.contains(#"tributary_cluster_lease_held{resource="extra"} 0"#), "the removed resource's lease is given back")
        teams.close()
        #expect(await service.terminate() == 0)
        redis.stop()
        await upstream.shutdown()
    }
}
