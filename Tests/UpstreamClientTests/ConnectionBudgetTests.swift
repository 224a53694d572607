import Glibc
@testable import UpstreamClient
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

    @Test("an idle connection one loop owes a starving loop moves there, socket and all: the upstream sees no new connection")
    func lentConnectionsMoveBetweenLoops() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let (a, b) = try await Self.pair(poolSize: 2)
        // The first loop opens the whole budget, two connections, and keeps them idle.
        let (aClient, aOutcomes) = (a.client, a.outcomes)
        try await a.thread.run { _ in
            for id in 0..<2 {
                aClient.value.execute(UpstreamRequest(base: base, path: "/a/\(id)")) { outcome in aOutcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await a.outcomes.wait(timeout: .seconds(5)) { $0.count == 2 })
        let opened = Set(upstream.requests.map(\.clientPort))
        #expect(opened.count == 2)
        // The second loop starves; the first lends it both.
        let (bClient, bOutcomes) = (b.client, b.outcomes)
        try await b.thread.run { _ in
            for id in 0..<6 {
                bClient.value.execute(UpstreamRequest(base: base, path: "/b/\(id)")) { outcome in bOutcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await b.outcomes.wait(timeout: .seconds(10)) { $0.count == 6 })
        for outcome in b.outcomes.value.values { #expect(try outcome.get().status == 200) }
        #expect(Set(upstream.requests.map(\.clientPort)) == opened, "the second loop's calls went over the first loop's connections")
        #expect(try await a.thread.run { _ in aClient.value.connectionCount(for: base) } == 0)
        #expect(try await b.thread.run { _ in bClient.value.connectionCount(for: base) } == 2)
        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }

    @Test("a client that goes away frees its pools: their places in the shared budget are given back (the budget's members hold their pools until the client retires them)")
    func clientGoneGivesItsPlacesBack() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let budgets = ConnectionBudgets()
        let harness = try await Harness(UpstreamClient.Configuration(defaultPoolCapacity: 4, connectionBudgets: budgets))
        for id in 0..<3 { _ = try await harness.start(id, UpstreamRequest(base: base, path: "/\(id)")) }
        #expect(await harness.outcomes.wait(timeout: .seconds(10)) { $0.count == 3 })
        let budget = budgets.budget(for: base.origin)
        #expect(budget.heldCount >= 1, "the pool keeps its idle connections")
        await harness.stop()
        #expect(budget.heldCount == 0, "the pool was freed with its client, and left the budget")
        await upstream.shutdown()
    }

    @Test("a lent socket that no pool takes (pool gone, no room, job dropped) is closed and its budget place given back; a taken one stays open")
    func droppedLentSocketsAreClosed() throws {
        let budget = ConnectionBudget()
        budget.setLimit(2)
        #expect(budget.take() && budget.take())
        var dropped: [Int32] = [0, 0], taken: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &dropped) == 0)
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &taken) == 0)
        defer { for descriptor in [dropped[1], taken[0], taken[1]] { close(descriptor) } }

        var lent: LentConnection? = LentConnection(LentSocket(descriptor: dropped[0], idleSince: nil), budget: budget)
        _ = lent
        lent = nil
        var byte: UInt8 = 0
        #expect(read(dropped[1], &byte, 1) == 0, "the dropped socket's peer sees it closed")
        #expect(budget.heldCount == 1)

        let kept = LentConnection(LentSocket(descriptor: taken[0], idleSince: nil), budget: budget)
        #expect(kept.take()?.descriptor == taken[0])
        #expect(kept.take() == nil)
        #expect(write(taken[1], &byte, 1) == 1, "the taken socket is still open")
        #expect(budget.heldCount == 1)
    }

    @Test("a loop that gets busy while another holds the whole budget gets a share soon, not after the other is done")
    func busyLoopsShare() async throws {
        let upstream = try await Self.upstream()
        let base = try BaseURL(upstream.baseURL)
        let (a, b) = try await Self.pair(poolSize: 8)
        // Each loop's calls start in one loop turn, so that how fast this test's task runs on
        // a loaded machine does not decide how many of them are in flight. The first loop's
        // 800 calls keep it busy for 100 rounds of 30 ms: on a loaded machine the second loop's
        // thread may take a second or more to run (a full parallel run beside the browser test
        // once needed more than the 0.9 s of 240 calls), and the first must still be busy.
        let (aClient, aOutcomes) = (a.client, a.outcomes)
        try await a.thread.run { _ in
            for id in 0..<800 {
                aClient.value.execute(UpstreamRequest(base: base, path: "/a/\(id)")) { outcome in aOutcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.maxInFlight == 8 })
        let (bClient, bOutcomes) = (b.client, b.outcomes)
        let bSubmitted = Observed<ContinuousClock.Instant?>(nil)
        try await b.thread.run { _ in
            bSubmitted.update { $0 = .now }
            for id in 0..<40 {
                bClient.value.execute(UpstreamRequest(base: base, path: "/b/\(id)")) { outcome in bOutcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await b.outcomes.wait(timeout: .seconds(20)) { $0.count == 40 })
        #expect(await a.outcomes.wait(timeout: .seconds(30)) { $0.count == 800 })
        for outcome in Array(a.outcomes.value.values) + Array(b.outcomes.value.values) { #expect(try outcome.get().status == 200) }
        let requests = upstream.requests
        let aCalls = requests.filter { $0.path.hasPrefix("/a/") }
        let bCalls = requests.filter { $0.path.hasPrefix("/b/") }
        // Once the second loop has calls waiting, the first gives connections back as its calls
        // end: only a round or two of the first loop's calls start between the second loop's
        // calls being asked for and its first one starting. Waiting for the first loop to be
        // done, every one of its calls still waiting then would start in between.
        let submitted = try #require(bSubmitted.value)
        let firstOfB = bCalls.map(\.startedAt).min()!
        let aInBetween = aCalls.filter { $0.startedAt > submitted && $0.startedAt < firstOfB }.count
        let aAfter = aCalls.filter { $0.startedAt > firstOfB }.count
        #expect(aInBetween <= 16, "\(aInBetween) of the first loop's calls started between the second loop's asking and its first call")
        #expect(aAfter > 0, "the first loop was still busy when the second got its first connection")
        #expect(bCalls.maxInFlight >= 2)
        #expect(requests.maxInFlight <= 8)
        #expect(upstream.requests.maxConnectionsInUse <= 8)
        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }
}
