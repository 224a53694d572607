import Dispatch
import EventLoop
@testable import UpstreamClient
import Testing
import TributaryTesting

/// A configuration reload that removes every upstream of an origin retires its pool
/// (``UpstreamClient/retirePools(keeping:)``): a process reloaded many times holds neither
/// connections nor pools for origins it no longer calls. Raw upstreams report each
/// connection the client closes.
@Suite("Upstream pools of origins no longer configured")
struct PoolRetirementTests {
    static let answer = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".utf8)

    @Test("an idle pool retired: its connections close at once and it is gone; another origin's pool stays; a later call gets a new pool")
    func idlePool() async throws {
        let removed = try RawUpstream.start { _ in .send(Self.answer) }
        let kept = try RawUpstream.start { _ in .send(Self.answer) }
        defer { removed.stop(); kept.stop() }
        let (removedBase, keptBase) = (try BaseURL(removed.baseURL), try BaseURL(kept.baseURL))
        let harness = try await UpstreamClientTests.Harness()
        _ = try await harness.start(0, UpstreamRequest(base: removedBase, path: "/a"))
        _ = try await harness.start(1, UpstreamRequest(base: keptBase, path: "/b"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0.count == 2 })
        let client = harness.client
        #expect(try await harness.thread.run { _ in (client.value.poolCount, client.value.connectionCount(for: removedBase)) } == (2, 1))

        let pools = try await harness.thread.run { _ in
            client.value.retirePools(keeping: [keptBase.origin])
            return client.value.poolCount
        }
        #expect(pools == 1)
        #expect(await removed.closed.wait(timeout: .seconds(5)) { $0 == [0] }, "the idle connection is closed")
        #expect(try await harness.thread.run { _ in client.value.connectionCount(for: keptBase) } == 1)
        #expect(kept.closed.value.isEmpty, "the other origin's connection stays")

        _ = try await harness.start(2, UpstreamRequest(base: removedBase, path: "/a"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { (try? $0[2]?.get().status) == 200 })
        #expect(try await harness.thread.run { _ in client.value.poolCount } == 2)
        await harness.stop()
    }

    @Test("a pool retired with a call in flight: the call is answered, its connection then closes instead of idling, and the pool is gone")
    func poolWithCallInFlight() async throws {
        let release = DispatchSemaphore(value: 0)
        let upstream = try RawUpstream.start { _ in
            release.wait()
            return .send(Self.answer)
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await UpstreamClientTests.Harness()
        _ = try await harness.start(0, UpstreamRequest(base: base, path: "/slow"))
        #expect(await upstream.requests.wait(timeout: .seconds(5)) { $0.count == 1 })
        let client = harness.client
        let pools = try await harness.thread.run { _ in
            client.value.retirePools(keeping: [])
            return client.value.poolCount
        }
        #expect(pools == 1, "kept until its call ends")
        #expect(upstream.closed.value.isEmpty, "the connection in use stays open")

        release.signal()
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { (try? $0[0]?.get().status) == 200 })
        #expect(await upstream.closed.wait(timeout: .seconds(5)) { $0 == [0] }, "closed once answered, not kept idle")
        // The pool is let go a loop turn after its last call ended, before this job runs.
        #expect(try await harness.thread.run { _ in client.value.poolCount } == 0)
        await harness.stop()
    }
}
