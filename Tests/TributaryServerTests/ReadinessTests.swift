import Foundation
import Testing
@testable import AccessControl
@testable import TributaryServer
import TributaryTesting

/// `GET /readyz`: 200 while the service serves; 503 `starting` until it listens and, with
/// `cluster.redis`, has joined its fleet; 503 `draining` once it stops. `/healthz` stays
/// liveness throughout.
@Suite("Readiness: /readyz while starting, serving and draining")
struct ReadinessTests {
    static let groups = TaskGroupsFixture(count: 2)

    @Test("a process that listens is ready: 200 {status: ready}, not stored; /healthz says the same as before")
    func readyWhenListening() async throws {
        let upstream = try await ScriptedUpstream.start { Self.groups.reply(to: $0) ?? .json("{}", status: 404) }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let ready = try await service.get("/readyz")
        #expect(ready.status == 200)
        #expect(ready.text == #"{"status":"ready"}"#)
        #expect(ready.header("Cache-Control") == "no-store")
        #expect(try await service.get("/healthz").text == #"{"status":"ok"}"#)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("in a fleet: 503 starting (with Retry-After) until it has joined; then ready, and still ready when Redis goes away later")
    func readyOnceInTheFleet() async throws {
        let port = try LoopbackPort.free()
        let upstream = try await ScriptedUpstream.start { Self.groups.reply(to: $0) ?? .json("{}", status: 404) }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL) + """

            cluster: {redis: "redis://127.0.0.1:\(port)", secret: "\(FleetTests.secret)"}
            """)
        let starting = try await service.get("/readyz")
        #expect(starting.status == 503)
        #expect(starting.error?.code == "starting")
        #expect(starting.header("Retry-After") == "1")
        #expect(starting.header("Cache-Control") == "no-store")
        #expect(try await service.get("/healthz").status == 200, "alive, not ready")

        let redis = try await RedisServerProcess.start(port: port)
        #expect(await service.ready())
        redis.kill()
        #expect(try await Self.fleetDisconnected(service))
        #expect(try await service.get("/readyz").status == 200, "serving alone, as the contract has it")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("stopping: 503 draining to a connection that was open before, while a request in flight is answered")
    func drainingAtShutdown() async throws {
        let answer = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            let reply = Self.groups.reply(to: request) ?? .json("{}", status: 404)
            return request.path == "/groups" ? reply.held(until: { _ in answer.value }) : reply
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "30s"))
        let prober = try await TestConnection(port: service.port)
        try await prober.sendRequest("GET", "/readyz")
        #expect(try await prober.readResponse().status == 200)
        let client = try await TestConnection(port: service.port)
        try await client.sendRequest("GET", "/groups")
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.contains { $0.path == "/groups" } })

        let stopped = Observed(false)
        try await service.withWorker { worker in worker.shutDown(within: .seconds(30)) { stopped.update { $0 = true } } }
        try await prober.sendRequest("GET", "/readyz")
        let draining = try await prober.readResponse()
        #expect(draining.status == 503)
        #expect(draining.error?.code == "draining")

        answer.update { $0 = true }
        try await upstream.releaseHeld()
        #expect(try await client.readResponse().status == 200, "the request in flight is answered")
        #expect(await stopped.wait(timeout: .seconds(10)) { $0 })
        prober.close()
        client.close()
        await service.stop()
        await upstream.shutdown()
    }

    /// Waits (≤ 10 s) until `service`'s fleet connection is down: only its worker knows.
    static func fleetDisconnected(_ service: ServiceHarness) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await !service.withWorker({ $0.gate.isFleetConnected }) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
