import Foundation
import Glibc
import Testing
import TributaryTesting

/// After Redis returns, no subscriber steps back to older data (a defect found while
/// deploying the fleet, now fixed: states carry when they were produced).
///
/// While Redis is away every replica runs its own pipeline, so when it comes back a
/// follower's subscribers may have been shown a newer snapshot than the one the new leader
/// holds, which the leader publishes at once.
///
/// Reproduction, made deterministic: two replicas, no interval refresh; Redis killed; the
/// follower, running alone, refreshes (on going alone, and on a local reload) past the
/// leader's latest; the follower is paused (SIGSTOP) while Redis restarts, so the old leader
/// takes the lease again; resumed, the follower must not relay the leader's older state.
@Suite("The fleet after Redis returns")
struct FleetRejoinTests {
    @Test("after Redis returns, a follower's subscribers are never sent an older snapshot than they were already shown")
    func noStepBackAfterRedisReturns() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h")
        let streams = [
            try await SSEClient(port: fleet.replicas[0].port, path: "/groups"),
            try await SSEClient(port: fleet.replicas[1].port, path: "/groups"),
        ]
        for stream in streams { _ = try await stream.next(type: "snapshot") }
        let leader = try #require(await FleetTests.soleLeader(fleet.replicas))
        let follower = 1 - leader
        let leaderLatest = FleetThroughNginxTests.listCall(in: try await TestHTTP.get(port: fleet.replicas[leader].port, "/groups").text) ?? 0

        // Redis away: the follower runs alone and refreshes past the leader's latest.
        fleet.redis.kill()
        for replica in fleet.replicas {
            #expect(await replica.output.wait(timeout: .seconds(5)) { $0.contains("cluster: lost Redis") })
        }
        #expect(try await TestHTTP.request(port: fleet.replicas[follower].port, "POST", "/groups/reload").status == 202)
        var shown = 0
        while shown <= leaderLatest + 1 {
            shown = max(shown, FleetThroughNginxTests.listCall(of: try await streams[follower].next(type: "snapshot")) ?? 0)
        }

        // Redis back while the follower is paused: the old leader leads again.
        kill(fleet.replicas[follower].pid, SIGSTOP)
        try await fleet.redis.restart()
        #expect(await fleet.replicas[leader].output.wait(timeout: .seconds(15)) { $0.components(separatedBy: "cluster: joined the fleet").count == 3 })
        #expect(await Self.holdsLease(fleet.replicas[leader]))
        kill(fleet.replicas[follower].pid, SIGCONT)
        #expect(await fleet.replicas[follower].output.wait(timeout: .seconds(15)) { $0.components(separatedBy: "cluster: joined the fleet").count == 3 })

        // A fresh refresh through the leader; everything the follower's subscriber gets
        // until it arrives must be at least as new as what it was shown.
        let callsBefore = fleet.upstream.listCalls.value
        #expect(try await TestHTTP.request(port: fleet.replicas[leader].port, "POST", "/groups/reload").status == 202)
        var received: [Int] = []
        while received.last ?? 0 <= callsBefore {
            received.append(FleetThroughNginxTests.listCall(of: try await streams[follower].next(type: "snapshot")) ?? 0)
        }
        #expect(received.allSatisfy { $0 >= shown }, "the follower's subscriber was shown list call \(shown), then sent \(received)")
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    /// Waits (≤ 5 s) until `replica` reports holding the lease of `groups`: only its
    /// `/metrics` tells, so this asks every 50 ms.
    static func holdsLease(_ replica: ServiceProcess) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if (try? await FleetTests.metric(replica, "tributary_cluster_lease_held", #"resource="groups""#)) == 1 { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }
}
