import Testing
import TributaryTesting

@Suite("GET /groups as JSON")
struct GroupsJSONTests {
    @Test("the list merged with metadata, in list order, although later groups answer first")
    func listOrder() async throws {
        let fixture = TaskGroupsFixture(count: 12)
        let upstream = try await ScriptedUpstream.start { request in
            let index = fixture.groups.firstIndex { $0 == fixture.group(forMetadataPath: request.path) } ?? 0
            return fixture.reply(to: request, delay: .milliseconds(30 * (11 - index)))!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let response = try await service.get("/groups")
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(response.text == fixture.mergedJSON)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("metadata calls run concurrently, never more than the configured concurrency")
    func fanOutConcurrency() async throws {
        let fixture = TaskGroupsFixture(count: 20)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: .milliseconds(15))! }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "concurrency: 4"))
        #expect(try await service.get("/groups").text == fixture.mergedJSON)
        let metadata = upstream.requests.filter { $0.path != "/groups" }
        #expect(metadata.count == 20)
        #expect(metadata.maxInFlight == 4)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("a client that disconnects cancels every upstream call in flight: the upstream sees them close")
    func disconnectCancelsUpstream() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let upstream = try await ScriptedUpstream.start { request in request.path == "/groups" ? fixture.reply(to: request)! : .hang }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "60s"))
        let client = try await TestConnection(port: service.port)
        try await client.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 5 })
        client.close()
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.allSatisfy { !$0.inFlight } })
        #expect(upstream.requests.filter { $0.path != "/groups" }.allSatisfy { $0.closedByClient })
        await service.stop()
        await upstream.shutdown()
    }

    @Test("when calls to the upstream already fill its pool and line, the next answer is 503 upstream_saturated at once, with Retry-After")
    func saturatedUpstream() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .hang }
        let service = try await ServiceHarness(yaml: """
            upstreams:
              tasks: {url: "\(upstream.baseURL)", timeout: 60s, retries: 0, poolSize: 1, maxQueue: 1}
            resources:
              groups:
                kind: list
                upstream: tasks
                list: {path: /groups, items: result}
                details: {path: "/groups/{id}/metadata", value: result}
                coalesce: false  # each request its own calls, or the later ones would join the first
            """)
        let first = try await TestConnection(port: service.port)
        try await first.sendRequest("GET", "/groups")
        let second = try await TestConnection(port: service.port)
        try await second.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.count == 1 })
        let started = ContinuousClock.now
        let refused = try await service.get("/groups")
        #expect(refused.status == 503)
        #expect(refused.error?.code == "upstream_saturated")
        #expect(refused.header("Retry-After") == "1")
        // Far from the 60 s timeout, and far from what a loaded run's stalls add (a 2 s bound
        // failed once at 2.24 s).
        #expect(ContinuousClock.now - started < .seconds(30), "refused at once, not after the upstream timeout")
        #expect(upstream.requests.count == 1)
        first.close()
        second.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("upstream failures become JSON errors naming the upstream: 502, 504 on timeout, 502 with the path for bad JSON")
    func upstreamFailures() async throws {
        let mode = Observed("status")
        let upstream = try await ScriptedUpstream.start { _ in
            switch mode.value {
            case "status": .json(#"{"e":1}"#, status: 500)
            case "hang": .hang
            case "garbage": .text("{not json")
            default: .json("{}", status: 404)
            }
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "300ms"))
        let cases: [(String, Int, String, String)] = [
            ("status", 502, "upstream_status", "upstream tasks: GET /groups answered 500"),
            ("hang", 504, "upstream_timeout", "upstream tasks: GET /groups failed: timeout"),
            ("garbage", 502, "upstream_malformed", "upstream tasks: GET /groups returned malformed JSON"),
        ]
        for (name, status, code, message) in cases {
            mode.update { $0 = name }
            let response = try await service.get("/groups")
            #expect(response.status == status, "\(name)")
            #expect(response.header("Content-Type") == "application/json", "\(name)")
            #expect(response.error?.code == code, "\(name)")
            #expect(response.error?.message.hasPrefix(message) == true, "\(name): \(response.text)")
        }
        await service.stop()
        await upstream.shutdown()
    }

    @Test("unknown paths get 404 and wrong methods 405, as JSON, and the service keeps serving")
    func badRequests() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let missing = try await service.get("/no/such/path")
        #expect(missing.status == 404)
        #expect(missing.error?.code == "not_found")
        let wrongMethod = try await TestHTTP.request(port: service.port, "DELETE", "/groups")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.header("Allow") == "GET")
        #expect(wrongMethod.error?.code == "method_not_allowed")
        #expect(try await service.get("/healthz").status == 200)
        #expect(try await service.get("/groups").text == fixture.mergedJSON)
        await service.stop()
        await upstream.shutdown()
    }
}
