import Testing
import TributaryTesting

/// `staleIfError`: a JSON answer whose fetch fails is the last good document of the same URL,
/// when it is recent enough, marked with `Age` and `Tributary-Stale`. Against a real worker
/// and a scripted search upstream that answers, then fails as told.
@Suite("Stale if error")
struct StaleIfErrorTests {
    /// How the upstream answers: `ok`, `status` (500), or `hang` (past the 300 ms timeout).
    let mode = Observed("ok")

    /// The service with `staleIfError` on its search resource; the upstream's circuit breaker
    /// is off unless `breaker` says otherwise, so that each failure here reaches the upstream.
    private func start(
        staleIfError: String?, breaker: String = "{enabled: false}", server: String = ""
    ) async throws -> (ScriptedUpstream, ServiceHarness) {
        let upstream = try await ScriptedUpstream.start { [mode] request in
            switch mode.value {
            case "ok": SearchFixture.reply(to: request) ?? .json("{}", status: 404)
            case "status": .json(#"{"e":1}"#, status: 500)
            default: .hang
            }
        }
        let yaml = Self.yaml(upstream: upstream.baseURL, staleIfError: staleIfError, breaker: breaker, server: server)
        let service = try await ServiceHarness(yaml: yaml)
        return (upstream, service)
    }

    static func yaml(upstream: String, staleIfError: String?, breaker: String = "{enabled: false}", server: String = "") -> String {
        """
        server: {\(server)}
        upstreams:
          search: {url: "\(upstream)", timeout: 300ms, retries: 0, circuitBreaker: \(breaker)}
        resources:
          search:
            kind: search
            upstream: search
            path: /search/repositories
            items: items
        \(staleIfError.map { "    staleIfError: \($0)" } ?? "")
        """
    }

    @Test("within staleIfError a failed fetch answers 200 with the last good document, Age and Tributary-Stale naming the error")
    func staleWithin() async throws {
        let (upstream, service) = try await start(staleIfError: "1m")
        let good = try await service.get("/search?q=swift")
        #expect(good.status == 200)
        #expect(good.header("Tributary-Stale") == nil)
        #expect(good.header("Age") == nil)
        for (mode, code) in [("status", "upstream_status"), ("hang", "upstream_timeout")] {
            self.mode.update { $0 = mode }
            let stale = try await service.get("/search?q=swift")
            #expect(stale.status == 200, "\(mode)")
            #expect(stale.text == SearchFixture.itemsJSON(for: "swift"), "\(mode)")
            #expect(stale.header("Tributary-Stale") == code, "\(mode)")
            #expect(stale.header("Age").flatMap(Int.init).map { (0...60).contains($0) } == true, "\(mode): \(stale)")
            #expect(stale.header("ETag") == good.header("ETag"), "\(mode)")
        }
        // A stale answer is still a cacheable one: its tag gets a 304, HEAD no body.
        let revalidated = try await service.get("/search?q=swift", headers: [("If-None-Match", good.header("ETag")!)])
        #expect(revalidated.status == 304)
        #expect(revalidated.header("Tributary-Stale") == "upstream_timeout")
        let head = try await TestHTTP.request(port: service.port, "HEAD", "/search?q=swift")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.header("Tributary-Stale") == "upstream_timeout")
        // Another query never had a good document: it gets the error, not swift's results.
        let other = try await service.get("/search?q=rust")
        #expect(other.status == 504)
        #expect(other.error?.code == "upstream_timeout")
        // Recovered: a fresh answer, no longer marked.
        mode.update { $0 = "ok" }
        let fresh = try await service.get("/search?q=swift")
        #expect(fresh.status == 200)
        #expect(fresh.header("Tributary-Stale") == nil)
        #expect(upstream.requests.count == 7, "every answer asked the upstream: stale answers are no cache")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("an open circuit is answered from the last good document too, marked upstream_circuit_open, with no upstream call")
    func staleWhileCircuitOpen() async throws {
        let (upstream, service) = try await start(staleIfError: "1m", breaker: "{failures: 1, openFor: 1h}")
        let good = try await service.get("/search?q=swift")
        #expect(good.status == 200)
        mode.update { $0 = "status" }
        let failed = try await service.get("/search?q=swift")
        #expect(failed.status == 200)
        #expect(failed.header("Tributary-Stale") == "upstream_status", "the failure that opens the circuit")
        let open = try await service.get("/search?q=swift")
        #expect(open.status == 200)
        #expect(open.text == good.text)
        #expect(open.header("Tributary-Stale") == "upstream_circuit_open")
        #expect(upstream.requests.count == 2, "the open circuit called no one")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("a document older than staleIfError is not answered: the failure is, as usual")
    func staleBeyond() async throws {
        let (upstream, service) = try await start(staleIfError: "1s")
        let asked = ContinuousClock.now
        #expect(try await service.get("/search?q=swift").status == 200)
        mode.update { $0 = "status" }
        // Asked until the document is more than a second old (each ask fails upstream); until
        // then the answers are stale ones.
        var answer = try await service.get("/search?q=swift")
        let deadline = ContinuousClock.now + .seconds(15)
        while answer.status == 200, ContinuousClock.now < deadline {
            #expect(answer.header("Tributary-Stale") == "upstream_status")
            try await Task.sleep(for: .milliseconds(100))
            answer = try await service.get("/search?q=swift")
        }
        #expect(ContinuousClock.now - asked > .seconds(1), "not before the document was a second old")
        #expect(answer.status == 502)
        #expect(answer.error?.code == "upstream_status")
        #expect(answer.header("Tributary-Stale") == nil)
        #expect(answer.header("Age") == nil)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("off by default: a failed fetch is the error, whatever was answered before")
    func offByDefault() async throws {
        let (upstream, service) = try await start(staleIfError: nil)
        #expect(try await service.get("/search?q=swift").status == 200)
        mode.update { $0 = "status" }
        let failed = try await service.get("/search?q=swift")
        #expect(failed.status == 502)
        #expect(failed.error?.code == "upstream_status")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("server.staleIfErrorBytes bounds the kept documents: one more evicts the one fetched longest ago, and only it")
    func boundedByBytes() async throws {
        // Each of these documents counts ~100 bytes of JSON and URL and ~400 of overhead:
        // 1,200 bytes hold two of them, not three.
        let (upstream, service) = try await start(staleIfError: "1h", server: "staleIfErrorBytes: 1200")
        for query in ["vapor", "nginx", "vapor"] {
            #expect(try await service.get("/search?q=\(query)").status == 200)
        }
        // nginx is now the one fetched longest ago (vapor again since): it makes room.
        #expect(try await service.get("/search?q=hummingbird").status == 200)
        mode.update { $0 = "status" }
        for query in ["vapor", "hummingbird"] {
            let stale = try await service.get("/search?q=\(query)")
            #expect(stale.status == 200, "\(query)")
            #expect(stale.text == SearchFixture.itemsJSON(for: query), "\(query)")
            #expect(stale.header("Tributary-Stale") == "upstream_status", "\(query)")
        }
        let evicted = try await service.get("/search?q=nginx")
        #expect(evicted.status == 502)
        #expect(evicted.error?.code == "upstream_status")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("server.staleIfErrorBytes: 0 keeps nothing: a failed fetch is the error")
    func zeroBytes() async throws {
        let (upstream, service) = try await start(staleIfError: "1h", server: "staleIfErrorBytes: 0")
        #expect(try await service.get("/search?q=swift").status == 200)
        mode.update { $0 = "status" }
        #expect(try await service.get("/search?q=swift").status == 502)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("the last good documents are the process's: a worker answers stale with what another worker fetched")
    func sharedAcrossWorkers() async throws {
        let (upstream, first) = try await start(staleIfError: "1m")
        let second = try await ServiceHarness(
            yaml: Self.yaml(upstream: upstream.baseURL, staleIfError: "1m"), shares: first.shares)
        #expect(try await first.get("/search?q=swift").status == 200)
        mode.update { $0 = "status" }
        let stale = try await second.get("/search?q=swift")
        #expect(stale.status == 200)
        #expect(stale.text == SearchFixture.itemsJSON(for: "swift"))
        #expect(stale.header("Tributary-Stale") == "upstream_status")
        await second.stop()
        await first.stop()
        await upstream.shutdown()
    }
}
