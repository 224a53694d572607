import Testing
import TributaryTesting

@Suite("Circuit breaker: an upstream that keeps failing is left alone until one probe finds it back")
struct CircuitBreakerTests {
    /// What the scripted upstream does: fail every call (500), or serve the groups, the list
    /// call after `listDelay` (a probe held in flight long enough to look at it).
    enum Health: Sendable, Equatable {
        case down
        case up(listDelay: Duration)
    }

    /// A service whose `groups` resource calls an upstream named `upstreamName` (the circuit
    /// gauge is process-wide: each test names its upstream apart) with `breaker` settings.
    struct World {
        let fixture = TaskGroupsFixture(count: 2)
        let health: Observed<Health>
        let upstream: ScriptedUpstream
        let service: ServiceHarness
        let upstreamName: String

        static func start(upstreamName: String, breaker: String) async throws -> World {
            let fixture = TaskGroupsFixture(count: 2)
            let health = Observed(Health.down)
            let upstream = try await ScriptedUpstream.start { request in
                switch health.value {
                case .down: return .json(#"{"down":true}"#, status: 500)
                case .up(let listDelay): return fixture.reply(to: request, delay: request.path == "/groups" ? listDelay : .zero)!
                }
            }
            let service = try await ServiceHarness(yaml: """
                upstreams:
                  \(upstreamName):
                    url: \(upstream.baseURL)
                    timeout: 10s
                    retries: 0
                    circuitBreaker: \(breaker)
                resources:
                  groups:
                    kind: list
                    upstream: \(upstreamName)
                    list: {path: /groups, items: result, id: id}
                    details: {path: "/groups/{id}/metadata", value: result}
                    refreshInterval: 1h
                    coalesce: false   # each request its own calls: a request during the probe must not join it
                """)
            return World(health: health, upstream: upstream, service: service, upstreamName: upstreamName)
        }

        /// `tributary_upstream_circuit_state` of this world's upstream, nil when there is none.
        func circuitState() async throws -> Double? {
            let key = #"tributary_upstream_circuit_state{upstream="\#(upstreamName)"} "#
            let text = try await service.get("/metrics").text
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return nil }
            return Double(line.dropFirst(key.count))
        }

        /// Asks `GET /groups` every 20 ms while it is a fast `upstream_circuit_open` (each one
        /// checked on the way), until the circuit lets one through: that answer, or nil after
        /// `timeout`. Only the answers tell when `openFor` has passed.
        func firstAnswerPastTheCircuit(timeout: Duration = .seconds(10)) async throws -> TestResponse? {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                let response = try await service.get("/groups")
                guard response.status == 503 else { return response }
                #expect(response.error?.code == "upstream_circuit_open", "\(response.text)")
                try await Task.sleep(for: .milliseconds(20))
            }
            return nil
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("closed → open after the configured failures; fast 503s with Retry-After and no upstream call; one probe (half-open) → closed")
    func opensThenCloses() async throws {
        // openFor short enough to wait for, long enough that a loaded machine answers several
        // requests inside it.
        let world = try await World.start(upstreamName: "tripping", breaker: "{failures: 3, openFor: 2s}")
        #expect(try await world.circuitState() == 0)
        for failure in 1...3 {
            let response = try await world.service.get("/groups")
            #expect(response.status == 502)
            #expect(response.error?.code == "upstream_status")
            #expect(world.upstream.requests.count == failure)
            #expect(try await world.circuitState() == (failure < 3 ? 0 : 1))
        }

        // Open: answered at once, nothing reaches the upstream.
        for _ in 0..<3 {
            let refused = try await world.service.get("/groups")
            #expect(refused.status == 503)
            #expect(refused.error?.code == "upstream_circuit_open")
            #expect(refused.error?.message.contains("tripping") == true)
            #expect(["1", "2"].contains(refused.header("Retry-After")), "under 2 s until the probe, rounded up")
        }
        #expect(world.upstream.requests.count == 3)

        // Back up; the probe (the list call) is held 3 s so the half-open state can be seen.
        world.health.update { $0 = .up(listDelay: .seconds(3)) }
        let probe = Task { try await world.firstAnswerPastTheCircuit() }
        #expect(await world.upstream.records.wait(timeout: .seconds(10)) { $0.count == 4 })
        #expect(try await world.circuitState() == 2)
        let meanwhile = try await world.service.get("/groups")
        #expect(meanwhile.status == 503, "half-open: only the probe goes out")
        #expect(meanwhile.error?.code == "upstream_circuit_open")
        #expect(world.upstream.requests.count == 4)

        let probed = try await probe.value
        #expect(probed?.status == 200)
        #expect(probed?.text == world.fixture.mergedJSON)
        #expect(world.upstream.requests.map(\.path).dropFirst(3).first == "/groups", "the one call while open was the probe")
        #expect(try await world.circuitState() == 0)
        world.health.update { $0 = .up(listDelay: .zero) }
        #expect(try await world.service.get("/groups").text == world.fixture.mergedJSON)
        await world.stop()
    }

    @Test("a probe that fails opens the circuit for another openFor")
    func failedProbeReopens() async throws {
        let world = try await World.start(upstreamName: "reopening", breaker: "{failures: 2, openFor: 2s}")
        for _ in 1...2 { #expect(try await world.service.get("/groups").status == 502) }
        #expect(try await world.circuitState() == 1)

        let probed = try await world.firstAnswerPastTheCircuit()
        #expect(probed?.status == 502, "the probe's own failure")
        #expect(world.upstream.requests.count == 3, "one probe, nothing else")
        #expect(try await world.circuitState() == 1)
        let refused = try await world.service.get("/groups")
        #expect(refused.status == 503)
        #expect(refused.error?.code == "upstream_circuit_open")
        #expect(world.upstream.requests.count == 3)
        await world.stop()
    }

    @Test("Retry-After counts the seconds until the probe; a live stream gets event: error upstream_circuit_open")
    func retryAfterAndStreams() async throws {
        let world = try await World.start(upstreamName: "waiting", breaker: "{failures: 1, openFor: 30s}")
        let clock = ContinuousClock()
        let beforeFailure = clock.now
        #expect(try await world.service.get("/groups").status == 502)
        let refused = try await world.service.get("/groups")
        let elapsed = clock.now - beforeFailure
        #expect(refused.status == 503)
        // Counting down from 30 by the whole seconds that passed since the failure (a loaded
        // parallel run once took ten of them between the two requests), rounded up.
        let retryAfter = try #require(refused.header("Retry-After").flatMap { Int($0) }, "\(refused.header("Retry-After") ?? "none")")
        let passed = Int(elapsed.components.seconds)
        #expect((30 - passed - 1)...30 ~= retryAfter, "Retry-After \(retryAfter) after \(elapsed)")

        let stream = try await world.service.events("/groups")
        let error = try await stream.next(type: "error")
        #expect(error.data.contains(#""code":"upstream_circuit_open""#), "\(error.data)")
        #expect(world.upstream.requests.count == 1)
        stream.close()
        await world.stop()
    }

    @Test("the log says once that the circuit opened (a warning) and once that it closed")
    func logged() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let down = Observed(true)
        let upstream = try await ScriptedUpstream.start { request in down.value ? .json("{}", status: 500) : fixture.reply(to: request)! }
        let service = try await ServiceProcess(yaml: """
            upstreams:
              logged: {url: "\(upstream.baseURL)", retries: 0, circuitBreaker: {failures: 2, openFor: 1s}}
            resources:
              groups:
                kind: list
                upstream: logged
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
            """)
        for _ in 1...2 { #expect(try await TestHTTP.get(port: service.port, "/groups").status == 502) }
        down.update { $0 = false }
        let deadline = ContinuousClock.now + .seconds(10)
        while try await TestHTTP.get(port: service.port, "/groups").status != 200, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await service.output.wait(timeout: .seconds(5)) { $0.contains("upstream circuit closed") })
        let lines = service.output.value.split(separator: "\n")
        #expect(lines.filter { $0.contains("upstream circuit opened") }.count == 1)
        #expect(lines.first { $0.contains("upstream circuit opened") }?.contains("warning") == true)
        #expect(lines.filter { $0.contains("upstream circuit closed") }.count == 1)
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }

    @Test("4xx answers do not count as failures, and failures: 0 turns the breaker off")
    func whatDoesNotOpen() async throws {
        let notFound = try await ScriptedUpstream.start { _ in .json("{}", status: 404) }
        let world = try await World.start(upstreamName: "unbroken", breaker: "{failures: 0}")
        for _ in 1...4 { #expect(try await world.service.get("/groups").status == 502) }
        #expect(world.upstream.requests.count == 4, "every call went out")
        #expect(try await world.circuitState() == nil, "no breaker, no gauge")
        await world.stop()

        let service = try await ServiceHarness(yaml: """
            upstreams:
              answering: {url: "\(notFound.baseURL)", retries: 0, circuitBreaker: {failures: 2, openFor: 1h}}
            resources:
              groups:
                kind: list
                upstream: answering
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
            """)
        for _ in 1...4 {
            let response = try await service.get("/groups")
            #expect(response.error?.code == "upstream_status", "a 404 is an answer: the circuit stays closed")
        }
        #expect(notFound.requests.count == 4)
        await service.stop()
        await notFound.shutdown()
    }
}
