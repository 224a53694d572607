import Aggregation
import EventLoop
@testable import Fleet
import HTTPServer
import Logging
import OpenCombine
import Redis
import Testing
@testable import TributaryConfiguration
import TributaryTesting

/// The fleet's agent on its own, without a worker or an HTTP server: two agents (two
/// "replicas") on loop threads of their own, sharing a real `redis-server`, each with a live
/// pipeline whose refreshes it counts, and no streams of its own (``NoStreams``). What the
/// end-to-end fleet tests see through processes, here one behaviour at a time.
@Suite("Cluster agent: leases, relay, reloads and stream lookups through a real Redis")
struct ClusterAgentTests {
    /// One replica's agent and its pipeline of `groups`, whose refreshes are counted and whose
    /// document names the replica and the refresh.
    final class Replica: Sendable {
        let thread: LoopThread
        let name: String
        let refreshes = Observed(0)
        let shown = Observed<[String]>([])
        /// Times the agent joined the fleet.
        let joins = Observed(0)
        private let agent: LoopBound<ClusterAgent>
        private let fleet: LoopBound<FleetLiveResource>
        private let subscription = Observed<LoopBound<AnyCancellable>?>(nil)

        init(_ name: String, redis: RedisServerProcess, leaseTTL: Duration = .milliseconds(600)) async throws {
            self.name = name
            thread = try LoopThread()
            let (refreshes, joins) = (refreshes, joins)
            var settings = Configuration.Cluster(redis: try RedisEndpoint(redis.url))
            settings.leaseTTL = leaseTTL
            settings.secret = try ClusterSecret("cluster-agent-tests-secret-0123456789", at: "test")
            let (agent, fleet) = try await thread.run { [settings] loop in
                var logger = Logger(label: "test")
                logger.logLevel = .critical
                let agent = ClusterAgent(settings: settings, loop: loop, directory: NoStreams(), logger: logger) {
                    joins.update { $0 += 1 }
                }
                let local = LiveResource(name: "groups", refreshInterval: .seconds(3600), loop: loop) { _ in
                    var count = 0
                    refreshes.update { total in
                        total += 1
                        count = total
                    }
                    return Just(JSON.object([("by", .string(name)), ("refresh", .integer(count))]))
                        .setFailureType(to: ResourceError.self).eraseToAnyPublisher()
                }
                let fleet = agent.adopt(local, key: .publicDocument(of: "groups"), maximumDocumentBytes: 1 << 20)
                return (LoopBound(agent, loop: loop), LoopBound(fleet, loop: loop))
            }
            self.agent = agent
            self.fleet = fleet
            // In the fleet before anything is asked of it: subscribed before it joined, it
            // would run the pipeline alone and show its own, newer states.
            try #require(await joins.wait(timeout: .seconds(10)) { $0 > 0 }, "replica \(name) joined the fleet")
        }

        /// Subscribes to the pipeline's states, recording each document shown.
        func subscribe() async throws {
            let (fleet, shown, subscription) = (fleet, shown, subscription)
            try await thread.run { loop in
                let sink = fleet.value.states.sink { state in
                    if let json = state.snapshot?.json { shown.update { $0.append(String(decoding: json, as: UTF8.self)) } }
                }
                subscription.update { $0 = LoopBound(sink, loop: loop) }
            }
        }

        func unsubscribe() async throws {
            let subscription = subscription
            try await thread.run { _ in subscription.value?.value.cancel() }
        }

        var role: FleetLiveResource.Role {
            get async throws {
                let fleet = fleet
                return try await thread.run { _ in fleet.value.role }
            }
        }

        var isConnected: Bool {
            get async throws {
                let agent = agent
                return try await thread.run { _ in agent.value.isConnected }
            }
        }

        func reload() async throws {
            let agent = agent
            try await thread.run { _ in agent.value.reload("groups") }
        }

        /// The answer to forwarding a trigger to stream `id`.
        func forward(to id: StreamID) async throws -> Result<Void, HTTPError> {
            let agent = agent
            let outcome = Observed<Result<Void, HTTPError>?>(nil)
            try await thread.run { _ in
                agent.value.forward(.trigger("reload", arguments: [:]), to: id) { result in outcome.update { $0 = result } }
            }
            _ = await outcome.wait(timeout: .seconds(5)) { $0 != nil }
            return try #require(outcome.value)
        }

        func streamOpened(_ id: StreamID) async throws {
            let agent = agent
            try await thread.run { _ in agent.value.streamOpened(id) }
        }

        func stop() async {
            let (agent, fleet, subscription) = (agent, fleet, subscription)
            await thread.stop {
                subscription.value?.value.cancel()
                agent.value.leave()
                fleet.release()
                agent.release()
            }
        }
    }

    /// Waits until `condition` holds of `replica`, asking every 20 ms (roles change on the
    /// agents' own ticks, which nothing else announces), for at most 10 s.
    static func eventually(_ condition: @escaping @Sendable () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    @Test("the replica with subscribers takes the lease and runs the pipeline; one without rests")
    func subscriberLeads() async throws {
        let redis = try await RedisServerProcess.start()
        let a = try await Replica("a", redis: redis), b = try await Replica("b", redis: redis)
        try await a.subscribe()
        #expect(try await Self.eventually { try await a.role == .leading })
        #expect(try await b.role == .idle)
        #expect(a.shown.value.first?.contains(#""by":"a""#) == true)
        #expect(b.refreshes.value == 0)
        await a.stop()
        await b.stop()
        redis.stop()
    }

    @Test("a second replica with subscribers follows: it shows the leader's states, and refreshes nothing itself")
    func followerRelays() async throws {
        let redis = try await RedisServerProcess.start()
        let a = try await Replica("a", redis: redis), b = try await Replica("b", redis: redis)
        try await a.subscribe()
        #expect(try await Self.eventually { try await a.role == .leading })
        try await b.subscribe()
        #expect(try await Self.eventually { try await b.role == .following })
        #expect(await b.shown.wait(timeout: .seconds(5)) { $0.last?.contains(#""by":"a""#) == true }, "the latest state at once")
        try await b.reload()
        #expect(await b.shown.wait(timeout: .seconds(5)) { $0.contains { $0.contains(#""refresh":2"#) } }, "a reload from the follower runs on the leader")
        #expect(b.refreshes.value == 0)
        await a.stop()
        await b.stop()
        redis.stop()
    }

    @Test("when the leader leaves, the follower takes the lease within a lease time and runs the pipeline")
    func failover() async throws {
        let redis = try await RedisServerProcess.start()
        let a = try await Replica("a", redis: redis), b = try await Replica("b", redis: redis)
        try await a.subscribe()
        #expect(try await Self.eventually { try await a.role == .leading })
        try await b.subscribe()
        #expect(try await Self.eventually { try await b.role == .following })
        await a.stop()
        #expect(try await Self.eventually { try await b.role == .leading })
        #expect(await b.shown.wait(timeout: .seconds(5)) { $0.last?.contains(#""by":"b""#) == true })
        await b.stop()
        redis.stop()
    }

    @Test("a stream no replica registered is 404 unknown_stream; one this replica holds is not forwarded to itself")
    func streamLookups() async throws {
        let redis = try await RedisServerProcess.start()
        let a = try await Replica("a", redis: redis)
        #expect(try await Self.eventually { try await a.isConnected })
        let nowhere = try await a.forward(to: .random())
        guard case .failure(let error) = nowhere else { Issue.record("forwarded to no one: \(nowhere)"); return }
        #expect(error.code == "unknown_stream")
        let own = StreamID.random()
        try await a.streamOpened(own)
        guard case .failure(let ownError) = try await a.forward(to: own) else { Issue.record("forwarded to itself"); return }
        #expect(ownError.code == "unknown_stream")
        #expect(!ownError.message.contains(own.description), "the message shows no whole stream id")
        await a.stop()
        redis.stop()
    }

    @Test("with Redis gone, a replica with subscribers runs alone, and forwarding answers 503 cluster_unavailable")
    func alone() async throws {
        let redis = try await RedisServerProcess.start()
        let a = try await Replica("a", redis: redis)
        redis.kill()
        try await a.subscribe()
        #expect(try await Self.eventually { try await a.role == .standalone })
        #expect(await a.shown.wait(timeout: .seconds(5)) { !$0.isEmpty })
        guard case .failure(let error) = try await a.forward(to: .random()) else { Issue.record("forwarded without Redis"); return }
        #expect(error.code == "cluster_unavailable")
        await a.stop()
    }
}

/// A process without live streams: a control forwarded to it finds none, a reload reaches none.
struct NoStreams: LocalStreams {
    func apply(
        _ control: StreamControl, to id: StreamID, by subject: String?, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) -> Bool {
        false
    }

    func reload(_ aim: ReloadAim) -> Int { 0 }
}
