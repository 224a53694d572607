import Testing
import TributaryTesting

@Suite("Operations: metrics, CORS, admin token, limits")
struct OperationsTests {
    /// A service whose groups resource is named `name` (metrics are process-wide: a name of
    /// its own keeps this test's series apart from the others').
    static func service(named name: String, upstream: ScriptedUpstream, server: String = "", sse: String = "") async throws -> ServiceHarness {
        try await ServiceHarness(yaml: """
            server:
              listen: 127.0.0.1:0
            \(server.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            sse:
              heartbeat: 15s
            \(sse.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            upstreams:
              tasks: {url: "\(upstream.baseURL)", timeout: 60s, retries: 0}
            resources:
              \(name):
                kind: list
                upstream: tasks
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
                refreshInterval: 1h
            """)
    }

    @Test("/metrics counts requests by route and status, upstream latency and errors, cancellations, subscribers and pipelines")
    func metrics() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let hang = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            hang.value && request.path != "/groups" ? .hang : fixture.reply(to: request)!
        }
        let service = try await Self.service(named: "metered", upstream: upstream)
        #expect(try await service.get("/metered").status == 200)
        #expect(try await service.get("/metered/nope").status == 404)
        let stream = try await service.events("/metered")
        _ = try await stream.next(type: "snapshot")
        hang.update { $0 = true }
        let leaving = try await TestConnection(port: service.port)
        try await leaving.sendRequest("GET", "/metered")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 3 })
        leaving.close()
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.allSatisfy { !$0.inFlight } })

        let metrics = try await service.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = metrics.text
        for line in [
            #"tributary_http_requests_total{route="/metered",method="GET",status="200"} 1"#,
            #"tributary_http_requests_total{route="unmatched",method="GET",status="404"}"#,
            #"tributary_http_requests_total{route="/metered",method="GET",status="disconnected"} 1"#,
            #"tributary_upstream_request_duration_seconds_bucket{upstream="tasks""#,
            #"tributary_upstream_cancellations_total{upstream="tasks"}"#,
            #"tributary_sse_subscribers{resource="metered"} 1"#,
            #"tributary_live_pipelines{resource="metered"} 1"#,
        ] {
            #expect(text.contains(line), "missing: \(line)")
        }
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("upstream failures are counted by code")
    func upstreamErrors() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json("{}", status: 500) }
        let service = try await Self.service(named: "failing", upstream: upstream)
        #expect(try await service.get("/failing").status == 502)
        #expect(try await service.get("/metrics").text.contains(#"tributary_upstream_errors_total{upstream="tasks",code="upstream_status"}"#))
        await service.stop()
        await upstream.shutdown()
    }

    @Test("CORS: allowed origins get Access-Control-Allow-Origin and preflights are answered; others get nothing")
    func cors() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await Self.service(named: "shared", upstream: upstream, server: "corsOrigins: [https://app.example]")
        let allowed = try await service.get("/shared", headers: [("Origin", "https://app.example")])
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(allowed.header("Vary") == "Origin, Accept, Accept-Encoding", "CORS's Vary added to the resource's own")
        let other = try await service.get("/shared", headers: [("Origin", "https://evil.example")])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        let preflight = try await TestHTTP.request(port: service.port, "OPTIONS", "/streams/x/inputs/q", headers: [
            ("Origin", "https://app.example"), ("Access-Control-Request-Method", "PUT"),
        ])
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("PUT") == true)
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Last-Event-ID") == true)
        let stream = try await service.events("/shared", headers: [("Origin", "https://app.example")])
        #expect(stream.head.header("Access-Control-Allow-Origin") == "https://app.example")
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("with an admin token, reload needs it; stream triggers do not")
    func adminToken() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await Self.service(named: "guarded", upstream: upstream, server: "adminToken: s3cret")
        let missing = try await service.post("/guarded/reload")
        #expect(missing.status == 401)
        #expect(missing.error?.code == "unauthorized")
        #expect(missing.header("WWW-Authenticate") == "Bearer")
        let wrong = try await TestHTTP.request(port: service.port, "POST", "/guarded/reload", headers: [("Authorization", "Bearer s3cre")])
        #expect(wrong.status == 401)
        let right = try await TestHTTP.request(port: service.port, "POST", "/guarded/reload", headers: [("Authorization", "Bearer s3cret")])
        #expect(right.status == 202)
        let stream = try await service.events("/guarded")
        let id = try await stream.announcedID()
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/reload").status == 202)
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("beyond maxConnections a new connection gets 503 JSON and is closed; a freed slot is reused")
    func maxConnections() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await Self.service(named: "crowded", upstream: upstream, server: "maxConnections: 2")
        let first = try await TestConnection(port: service.port)
        let second = try await TestConnection(port: service.port)
        for connection in [first, second] {
            try await connection.sendRequest("GET", "/healthz")
            #expect(try await connection.readResponse().status == 200)
        }
        let third = try await TestConnection(port: service.port)
        try await third.sendRequest("GET", "/healthz")
        let refused = try await third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.error?.code == "too_many_connections")
        #expect(await third.waitForClose())
        first.close()
        // The server learns of the close asynchronously: asked until it has (for at most 10 s).
        var status = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while status != 200 && ContinuousClock.now < deadline {
            status = try await TestHTTP.get(port: service.port, "/healthz").status
        }
        #expect(status == 200)
        second.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("beyond sse.maxSubscribers a new stream gets 503 JSON")
    func maxSubscribers() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await Self.service(named: "popular", upstream: upstream, sse: "maxSubscribers: 1")
        let first = try await service.events("/popular")
        _ = try await first.next(type: "snapshot")
        let second = try await TestHTTP.get(port: service.port, "/popular", headers: [("Accept", "text/event-stream")])
        #expect(second.status == 503)
        #expect(second.error?.code == "too_many_subscribers")
        first.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("GET / is the live page, wired to groups, rows and search over one progressive /events stream of patches")
    func page() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json("{}") }
        let service = try await Self.service(named: "groups", upstream: upstream)
        let page = try await service.get("/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains(#"let url = "/events?resource=groups&resource=rows&resource=search&updates=patch&progressive=true""#))
        #expect(page.text.contains(#""&groups.fields=id,name,taskCount,lastUpdated&rows.fields=topic.id,topic.title,medias.id,medias.title";"#))
        #expect(page.text.components(separatedBy: "new EventSource(").count == 2, "one event stream")
        #expect(page.text.contains("<body data-state=\"connecting\" data-updates=\"0\" data-patches=\"0\">"),
                "no parameterized resource in this configuration: none named to the page")
        #expect(page.text.contains("/triggers/loadMore?topic="))
        #expect(page.text.contains("/inputs/q"))
        await service.stop()
        await upstream.shutdown()
    }
}
