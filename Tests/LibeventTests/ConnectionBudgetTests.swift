import Libevent
import Testing
import TributaryTesting

/// Two clients on loops of their own sharing ``ConnectionBudgets``, as the workers of one
/// process do, against one scripted upstream that counts the connections in use at once.
@Suite("Connection budget across loops")
struct ConnectionBudgetTests {
    typealias Harness = UpstreamClientTests.Harness

    /// Two loop threads' clients with one budget of `poolSize` connections to any origin.
    static func pair(poolSize: Int) async throws -> (Harness, Harness) {
        let budgets = ConnectionBudgets()
        let configuration = UpstreamClient.Configuration(defaultPoolCapacity: poolSize, connectionBudgets: budgets)
        return (try await Harness(configuration), try await Harness(configuration))
    }

    static func upstream() async throws -> ScriptedUpstream {
        try await ScriptedUpstream.start { request in .json(#"{"path":""# + request.path + #""}"#, delay: .milliseconds(30)) }
    }

    @Test("two loops busy at once hold at most the budget's connections together, and every call succeeds")
    func neverBeyondTheBudget() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let (a, b) = try await Self.pair(poolSize: 4)
        for id in 0..<30 {
            _ = try await a.start(id, UpstreamRequest(base: base, path: "/a/\(id)"))
            _ = try await b.start(id, UpstreamRequest(base: base, path: "/b/\(id)"))
        }
        #expect(await a.outcomes.wait(timeout: .seconds(20)) { $0.count == 30 })
        #expect(await b.outcomes.wait(timeout: .seconds(20)) { $0.count == 30 })
        for outcome in Array(a.outcomes.value.values) + Array(b.outcomes.value.values) { #expect(try outcome.get().status == 200) }
        #expect(upstream.requests.count == 60)
        #expect(upstream.requests.maxInFlight <= 4)
        #expect(upstream.requests.maxConnectionsInUse <= 4)
        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }

    @Test("a lone busy loop gets the whole budget, the other loop's idle connection included")
    func loneBusyLoopTakesAll() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let (a, b) = try await Self.pair(poolSize: 8)
        _ = try await b.start(0, UpstreamRequest(base: base, path: "/b/0"))
        #expect(await b.outcomes.wait(timeout: .seconds(5)) { $0.count == 1 })
        // All 40 in one loop turn: started one hop at a time, a loaded machine can start them
        // slower than the upstream's 30 ms answers them, and fewer than 8 are ever in flight.
        let (client, outcomes) = (a.client, a.outcomes)
        try await a.thread.run { _ in
            for id in 0..<40 {
                client.value.execute(UpstreamRequest(base: base, path: "/a/\(id)")) { outcome in outcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await a.outcomes.wait(timeout: .seconds(20)) { $0.count == 40 })
        let calls = upstream.requests.filter { $0.path.hasPrefix("/a/") }
        #expect(calls.maxInFlight == 8, "an even split would give this loop 4")
        #expect(upstream.requests.maxConnectionsInUse <= 8)
        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }

    @Test("a loop that gets busy while another holds the whole budget gets a share soon, not after the other is done")
    func busyLoopsShare() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let (a, b) = try await Self.pair(poolSize: 8)
        for id in 0..<120 { _ = try await a.start(id, UpstreamRequest(base: base, path: "/a/\(id)")) }
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.maxInFlight == 8 })
        for id in 0..<40 { _ = try await b.start(id, UpstreamRequest(base: base, path: "/b/\(id)")) }
        #expect(await b.outcomes.wait(timeout: .seconds(20)) { $0.count == 40 })
        #expect(await a.outcomes.wait(timeout: .seconds(20)) { $0.count == 120 })
        for outcome in Array(a.outcomes.value.values) + Array(b.outcomes.value.values) { #expect(try outcome.get().status == 200) }
        let requests = upstream.requests
        let aCalls = requests.filter { $0.path.hasPrefix("/a/") }
        let bCalls = requests.filter { $0.path.hasPrefix("/b/") }
        // The second loop's calls are a quarter of those waiting when it gets busy, so about a
        // quarter of the connections are its own from then on; waiting for the first loop's
        // calls to be done, its first one would start after all 120 of them.
        let firstOfB = bCalls.map(\.startedAt).min()!
        let aBeforeB = aCalls.filter { $0.startedAt < firstOfB }.count
        #expect(aBeforeB < 80, "\(aBeforeB) of the first loop's calls started before the second loop's first")
        #expect(bCalls.maxInFlight >= 2)
        #expect(requests.maxInFlight <= 8)
        #expect(upstream.requests.maxConnectionsInUse <= 8)
        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }
}
