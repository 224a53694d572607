import Foundation
import Testing
import TributaryTesting

@Suite("The tributary process: graceful shutdown, access log, workers")
struct ProcessTests {
    /// One worker unless `--workers` says otherwise; only the tasks upstream, so `poolSize`
    /// is its origin's alone.
    static func yaml(upstream: String, shutdownTimeout: String = "5s", poolSize: Int = 64, coalesce: Bool = true) -> String {
        """
        server:
          workers: 1
          shutdownTimeout: \(shutdownTimeout)
        upstreams:
          tasks: {url: "\(upstream)", timeout: 10s, retries: 0, poolSize: \(poolSize)}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            coalesce: \(coalesce)
        """
    }

    @Test("SIGTERM: no new connections, event streams end cleanly, the request in flight is answered, exit 0")
    func gracefulShutdown() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let slow = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            fixture.reply(to: request, delay: slow.value && request.path != "/groups" ? .milliseconds(600) : .zero)!
        }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL))
        let stream = try await SSEClient(port: service.port, path: "/groups")
        _ = try await stream.next(type: "snapshot")
        slow.update { $0 = true }
        let inFlight = try await TestConnection(port: service.port)
        try await inFlight.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 3 })

        let exit = Task { await service.terminate() }
        let answer = try await inFlight.readResponse()
        #expect(answer.status == 200)
        #expect(answer.text == fixture.mergedJSON)
        #expect(try await stream.readToEnd().isEmpty, "the stream ends with its last chunk, not a reset")
        #expect(await exit.value == 0)
        await #expect(throws: (any Error).self) { try await TestConnection(port: service.port) }
        #expect(service.output.value.contains("GET /groups 200"), "one access log line per request")
        await upstream.shutdown()
    }

    @Test("SIGTERM with a request that outlives the deadline: the process still exits 0 in time")
    func shutdownDeadline() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { request in request.path == "/groups" ? fixture.reply(to: request)! : .hang }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL, shutdownTimeout: "300ms"))
        let stuck = try await TestConnection(port: service.port)
        try await stuck.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.path != "/groups" && $0.inFlight } })
        let started = ContinuousClock.now
        #expect(await service.terminate() == 0)
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(await stuck.waitForClose())
        #expect(service.output.value.contains("shutdown deadline passed"))
        await upstream.shutdown()
    }

    @Test("--workers 2 serves on one port and stops cleanly")
    func workers() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL), arguments: ["--workers", "2"])
        #expect(service.output.value.contains("workers=2"))
        for _ in 0..<20 {
            #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        }
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("upstreams.<name>.poolSize bounds the whole process's connections, however many workers share it")
    func poolSplitAcrossWorkers() async throws {
        let fixture = TaskGroupsFixture(count: 12)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: .milliseconds(20))! }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL, poolSize: 4, coalesce: false), arguments: ["--workers", "2"])
        // Eight clients at once: with SO_REUSEPORT both workers get some of them, and each
        // would fill a pool of its own if poolSize were per worker (every request its own
        // calls: coalesced, they would share them).
        var clients: [TestConnection] = []
        for _ in 0..<8 { clients.append(try await TestConnection(port: service.port)) }
        for client in clients { try await client.sendRequest("GET", "/groups") }
        for client in clients { #expect(try await client.readResponse().text == fixture.mergedJSON) }
        let requests = upstream.requests
        #expect(requests.count == 8 * 13)
        #expect(requests.maxInFlight <= 4)
        #expect(requests.maxConnectionsInUse <= 4, "upstream connections")
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("one worker busy alone may use all of upstreams.<name>.poolSize, not half of it")
    func poolLentToTheBusyWorker() async throws {
        let fixture = TaskGroupsFixture(count: 16)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: .milliseconds(50))! }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL, poolSize: 8, coalesce: false), arguments: ["--workers", "2"])
        // One client connection: one worker gets all of its requests, and each needs 16
        // detail calls at once.
        let client = try await TestConnection(port: service.port)
        for _ in 0..<3 {
            try await client.sendRequest("GET", "/groups")
            #expect(try await client.readResponse().text == fixture.mergedJSON)
        }
        let details = upstream.requests.filter { $0.path.hasSuffix("/metadata") }
        #expect(details.count == 3 * 16)
        #expect(details.maxInFlight == 8, "an even split would give the busy worker 4")
        #expect(upstream.requests.maxConnectionsInUse <= 8)
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("out of file descriptors, accepting pauses instead of spinning, is counted and logged once, and resumes")
    func acceptOutOfDescriptors() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL), openFileLimit: 48)
        // More connections than the service has descriptors for: the kernel queues the rest,
        // and every accept of them fails with EMFILE.
        var burst: [TestConnection] = []
        for _ in 0..<80 { burst.append(try await TestConnection(port: service.port)) }
        let before = service.cpuTime
        try await Task.sleep(for: .seconds(1))  // a measurement window: no event marks "not spinning"
        let used = service.cpuTime - before
        #expect(used < .milliseconds(200), "the service used \(used) of CPU in one second while out of descriptors")
        for connection in burst { connection.close() }
        let metrics = try await TestHTTP.get(port: service.port, "/metrics")
        #expect(metrics.text.contains(#"tributary_http_accept_paused_total{reason="EMFILE"}"#))
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        let warnings = service.output.value.components(separatedBy: "accepting paused").count - 1
        #expect(warnings == 1, "one warning per ten seconds, not one per failed accept")
        #expect(!service.output.value.contains("Too many open files\n[warn]"))
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("during the drain, answers close their connections, and an event stream asked for ends at once with its retry")
    func drainClosesConnections() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        // The metadata call holds the drain open long enough for the stream request below to
        // arrive during it even on a loaded machine (once the drain ends the process exits,
        // and that request would find the connection closed).
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)! : fixture.reply(to: request, delay: .seconds(8))!
        }
        let service = try await ServiceProcess(yaml: Self.yaml(upstream: upstream.baseURL, shutdownTimeout: "30s"))
        let kept = try await TestConnection(port: service.port)
        try await kept.sendRequest("GET", "/healthz")
        #expect(try await kept.readResponse().header("Connection") == nil, "keep-alive before the stop")
        let inFlight = try await TestConnection(port: service.port)
        try await inFlight.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.path != "/groups" && $0.inFlight } })
        let exit = Task { await service.terminate() }
        #expect(await service.output.wait(timeout: .seconds(5)) { $0.contains("stopping") })
        try await kept.sendRequest("GET", "/groups", headers: [("Accept", "text/event-stream")])
        let stream = try await kept.readHead()
        #expect(stream.status == 200)
        #expect(stream.header("Connection") == "close")
        var events: [UInt8] = []
        while let chunk = try await kept.readChunk() { events += chunk }
        #expect(String(decoding: events, as: UTF8.self) == "retry: 2000\n")
        #expect(await kept.waitForClose())
        inFlight.setTimeout(.seconds(30))
        #expect(try await inFlight.readResponse().header("Connection") == "close")
        #expect(await exit.value == 0)
        await upstream.shutdown()
    }
}
