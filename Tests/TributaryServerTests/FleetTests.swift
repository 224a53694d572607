import Foundation
import Testing
import TributaryTesting

/// Replicas of the real binary coordinated through a real `redis-server`: one pipeline per
/// shared resource for the fleet, stream control from any replica, reloads everywhere,
/// failover of a dead lease holder, and running alone while Redis is away.
@Suite("The fleet: replicas coordinated through Redis")
struct FleetTests {
    /// An upstream whose group list changes with every call, so every refresh is a new snapshot.
    final class CountingUpstream: Sendable {
        let server: ScriptedUpstream
        let listCalls = Observed(0)
        let topicCalls = Observed(0)

        init() async throws {
            let listCalls = self.listCalls
            let topicCalls = self.topicCalls
            let media = MediaFixture(topics: ["a", "b"])
            server = try await ScriptedUpstream.start { request in
                switch request.path {
                case "/groups":
                    var call = 0
                    listCalls.update { count in
                        count += 1
                        call = count
                    }
                    return .json(#"{"result":[{"id":"g1","name":"call \#(call)"}]}"#)
                case "/groups/g1/metadata":
                    return .json(#"{"result":{"taskCount":1,"lastUpdated":"2026-11-22T10:00:00Z"}}"#)
                case "/topics":
                    topicCalls.update { $0 += 1 }
                    return media.reply(to: request)!
                default:
                    return media.reply(to: request) ?? SearchFixture.reply(to: request) ?? .json("{}", status: 404)
                }
            }
        }
    }

    /// The fleet's shared secret (`TRIBUTARY_CLUSTER_SECRET`), which signs what it writes to Redis.
    static let secret = "fleet-tests-secret-6f1d0c9a4b2e8d73"

    /// `replicas` processes of the binary, one worker each, all with `--redis` and the same
    /// secret, on a Redis of their own (or `redis`, shared with another fleet).
    struct Fleet {
        let redis: RedisServerProcess
        let upstream: CountingUpstream
        var replicas: [ServiceProcess]

        static func start(
            replicas count: Int, refresh: String = "300ms", leaseTTL: String = "1s", redis shared: RedisServerProcess? = nil,
            secret: String = FleetTests.secret
        ) async throws -> Fleet {
            let redis = if let shared { shared } else { try await RedisServerProcess.start() }
            let upstream = try await CountingUpstream()
            var replicas: [ServiceProcess] = []
            for _ in 0..<count {
                replicas.append(try await ServiceProcess(
                    yaml: FleetTests.yaml(upstream: upstream.server.baseURL, refresh: refresh, leaseTTL: leaseTTL),
                    arguments: ["--redis", redis.url], environment: ["TRIBUTARY_CLUSTER_SECRET": secret]))
            }
            // Ready: each replica has joined the fleet (one that has not would run every
            // pipeline alone and answer 503 for another replica's stream).
            for replica in replicas { #expect(await TestHTTP.ready(port: replica.port), "\(replica.output.value)") }
            return Fleet(redis: redis, upstream: upstream, replicas: replicas)
        }

        /// Waits (≤ 10 s) until the fleet's roles for `groups` are settled: one replica holds
        /// the lease and every other one follows it (is subscribed to its states in Redis).
        /// Right after the fleet forms, each replica's role waits for its own lease round trip,
        /// and until then one may still refresh alone.
        func settled() async throws -> Bool {
            let redis = try await RawRedisClient(port: self.redis.port)
            defer { redis.close() }
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if await FleetTests.soleLeader(replicas) != nil,
                   let channel = try await redis.command("PUBSUB", "CHANNELS", "*:states:groups").strings.first,
                   case .array(let counts?) = try await redis.command("PUBSUB", "NUMSUB", channel),
                   counts.count == 2, counts[1].integer == Int64(replicas.count - 1) {
                    return true
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }

        func stop() async {
            for replica in replicas where replica.isRunning { _ = await replica.terminate() }
            redis.stop()
            await upstream.server.shutdown()
        }
    }

    static func yaml(upstream: String, refresh: String, leaseTTL: String) -> String {
        """
        server: {workers: 1}
        cluster: {leaseTTL: \(leaseTTL)}
        upstreams:
          tasks: {url: "\(upstream)", timeout: 5s, retries: 0}
          media: {url: "\(upstream)", timeout: 5s, retries: 0}
          search: {url: "\(upstream)", timeout: 5s, retries: 0}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: \(refresh)
          rows:
            kind: pages
            upstream: media
            list: {path: /topics, items: result}
            pages: {path: "/topics/{id}/medias", items: result, cursor: next, parameter: page}
            row: {item: topic, pages: medias}
          search:
            kind: search
            upstream: search
            path: /search/repositories
            items: items
            debounce: 50ms
        """
    }

    /// The value of metric `name` with `labels` (`resource="groups"`) on `replica`.
    static func metric(_ replica: ServiceProcess, _ name: String, _ labels: String = "") async throws -> Double? {
        let text = try await TestHTTP.get(port: replica.port, "/metrics").text
        let key = labels.isEmpty ? name + " " : name + "{" + labels + "} "
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return nil }
        return Double(line.dropFirst(key.count))
    }

    /// Waits (≤ 10 s) until exactly one of `replicas` holds the lease of `groups`, and returns
    /// its index (nil if none did in time). Leases change on the agents' ticks and Redis
    /// round trips, which nothing announces, so this asks every 50 ms: right after a fleet
    /// forms or a holder dies, none may hold it yet, and on a busy machine two may for a
    /// moment (a late renewal, taken over before the old holder's next tick says so).
    static func soleLeader(_ replicas: [ServiceProcess]) async -> Int? {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let holding = try? await leaders(replicas), holding.count == 1 { return holding[0] }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }

    /// The replicas that hold the lease of `groups` now.
    static func leaders(_ replicas: [ServiceProcess]) async throws -> [Int] {
        var holding: [Int] = []
        for (index, replica) in replicas.enumerated() where try await metric(replica, "tributary_cluster_lease_held", #"resource="groups""#) == 1 {
            holding.append(index)
        }
        return holding
    }

    @Test("with subscribers on three replicas, one replica runs the pipeline: one list call per refresh, the same snapshots everywhere")
    func onePipelineForTheFleet() async throws {
        let fleet = try await Fleet.start(replicas: 3)
        var streams: [SSEClient] = []
        for replica in fleet.replicas { streams.append(try await SSEClient(port: replica.port, path: "/groups")) }
        for stream in streams { _ = try await stream.next(type: "snapshot") }
        // Each document names the list call it came from. One pipeline for the fleet: every
        // replica shows every call, so each stream's five refreshes are five consecutive
        // calls; three pipelines would split the calls between the replicas (1, 4, 7… on
        // one). Counting calls over the time the test takes to read them would measure the
        // test's pace as well: on a busy machine it reads late, and refreshes go on meanwhile.
        var calls: [[Int]] = []
        for stream in streams {
            var seen: [Int] = []
            while seen.count < 5 { seen.append(FleetThroughNginxTests.listCall(of: try await stream.next(type: "snapshot")) ?? -1) }
            calls.append(seen)
        }
        for (index, seen) in calls.enumerated() {
            #expect(seen == Array(seen[0]..<seen[0] + 5), "replica \(index)'s stream saw list calls \(seen)")
        }
        #expect(Set(calls[0]).intersection(calls[1]).count >= 3, "the same snapshots everywhere: \(calls)")
        #expect(Set(calls[0]).intersection(calls[2]).count >= 3, "the same snapshots everywhere: \(calls)")
        #expect(await Self.soleLeader(fleet.replicas) != nil)
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    @Test("a trigger or an input sent to any replica reaches the stream on the replica that holds it; an unknown stream is 404")
    func controlAcrossReplicas() async throws {
        let fleet = try await Fleet.start(replicas: 3)
        let media = MediaFixture(topics: ["a", "b"])
        let rows = try await SSEClient(port: fleet.replicas[0].port, path: "/rows")
        let rowsID = try await rows.announcedID()
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON())
        let trigger = try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(rowsID)/triggers/loadMore?topic=a")
        #expect(trigger.status == 202)
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON(loaded: ["a": 2]))

        let search = try await SSEClient(port: fleet.replicas[0].port, path: "/search?q=swi")
        let searchID = try await search.announcedID()
        _ = try await search.next(type: "snapshot")
        let input = try await TestHTTP.request(port: fleet.replicas[2].port, "PUT", "/streams/\(searchID)/inputs/q", body: Array("vapor".utf8))
        #expect(input.status == 202)
        #expect(try await search.next(type: "snapshot").data == SearchFixture.itemsJSON(for: "vapor"))

        let refused = try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(rowsID)/triggers/nothing")
        #expect(refused.status == 404)
        #expect(refused.error?.code == "unknown_trigger", "the holder's own answer comes back")
        let unknown = try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(StreamIDs.random)/triggers/reload")
        #expect(unknown.status == 404)
        #expect(unknown.error?.code == "unknown_stream")
        rows.close()
        #expect(await fleet.replicas[0].output.wait(timeout: .seconds(5)) { $0.contains("GET /rows disconnected") || $0.contains("GET /rows 200") })
        let gone = try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(rowsID)/triggers/reload")
        #expect(gone.status == 404)
        search.close()
        await fleet.stop()
    }

    @Test("a reload sent to any replica refreshes the subscribers of every replica")
    func reloadEverywhere() async throws {
        let fleet = try await Fleet.start(replicas: 3, refresh: "1h")
        var groups: [SSEClient] = []
        for replica in fleet.replicas { groups.append(try await SSEClient(port: replica.port, path: "/groups")) }
        var first: [String] = []
        for stream in groups { first.append(try await stream.next(type: "snapshot").id ?? "") }
        let calls = fleet.upstream.listCalls.value
        #expect(try await TestHTTP.request(port: fleet.replicas[2].port, "POST", "/groups/reload").status == 202)
        for (index, stream) in groups.enumerated() {
            #expect(try await stream.next(type: "snapshot").id != first[index])
        }
        #expect(fleet.upstream.listCalls.value == calls + 1, "one refresh, run by the lease holder")

        var rows: [SSEClient] = []
        for replica in fleet.replicas.prefix(2) { rows.append(try await SSEClient(port: replica.port, path: "/rows")) }
        for stream in rows { _ = try await stream.next(type: "snapshot") }
        let topicCalls = fleet.upstream.topicCalls.value
        #expect(try await TestHTTP.request(port: fleet.replicas[2].port, "POST", "/rows/reload").status == 202)
        #expect(await fleet.upstream.topicCalls.wait(timeout: .seconds(5)) { $0 == topicCalls + 2 }, "each stream reloads, on its own replica")
        for stream in groups + rows { stream.close() }
        await fleet.stop()
    }

    @Test("when the lease holder is killed, the survivors' subscribers get the next snapshot within leaseTTL and one refresh, with no error")
    func failover() async throws {
        let fleet = try await Fleet.start(replicas: 3, refresh: "400ms", leaseTTL: "1s")
        var streams: [SSEClient] = []
        for replica in fleet.replicas { streams.append(try await SSEClient(port: replica.port, path: "/groups")) }
        for stream in streams { _ = try await stream.next(type: "snapshot") }
        let leader = try #require(await Self.soleLeader(fleet.replicas))
        let survivors = streams.indices.filter { $0 != leader }
        var last: [Int: String] = [:]
        for index in survivors { last[index] = try await streams[index].next(type: "snapshot").id }
        fleet.replicas[leader].kill()
        let killed = ContinuousClock.now
        for index in survivors {
            while true {
                let event = try await streams[index].next()
                #expect(event.type != "error", "a survivor saw \(event.data)")
                if event.type == "snapshot" && event.id != last[index] && ContinuousClock.now - killed > .milliseconds(400) { break }
            }
        }
        let failover = ContinuousClock.now - killed
        #expect(failover < .milliseconds(1000 + 400 + 1000), "the next snapshot came \(failover) after the kill")
        let alive = survivors.map { fleet.replicas[$0] }
        #expect(await Self.soleLeader(alive) != nil)
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    @Test("Redis away: each replica runs alone and another replica's stream answers 503; Redis back: the fleet forms again")
    func redisDownAndBack() async throws {
        let fleet = try await Fleet.start(replicas: 2, refresh: "300ms")
        let groups = [
            try await SSEClient(port: fleet.replicas[0].port, path: "/groups"),
            try await SSEClient(port: fleet.replicas[1].port, path: "/groups"),
        ]
        for stream in groups { _ = try await stream.next(type: "snapshot") }
        let rows = try await SSEClient(port: fleet.replicas[0].port, path: "/rows")
        let rowsID = try await rows.announcedID()

        fleet.redis.kill()
        for replica in fleet.replicas {
            #expect(await replica.output.wait(timeout: .seconds(5)) { $0.contains("cluster: lost Redis") })
            #expect(try await Self.metric(replica, "tributary_cluster_connected") == 0)
        }
        for stream in groups {
            for _ in 0..<3 { #expect(try await stream.next().type == "snapshot", "streams keep their refreshes, alone") }
        }
        let unreachable = try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(rowsID)/triggers/reload")
        #expect(unreachable.status == 503)
        #expect(unreachable.error?.code == "cluster_unavailable")
        #expect(try await TestHTTP.request(port: fleet.replicas[0].port, "POST", "/streams/\(rowsID)/triggers/reload").status == 202)

        try await fleet.redis.restart()
        for replica in fleet.replicas {
            #expect(await replica.output.wait(timeout: .seconds(15)) { $0.components(separatedBy: "cluster: joined the fleet").count == 3 })
        }
        #expect(try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/streams/\(rowsID)/triggers/reload").status == 202)
        // One pipeline again: once the roles are settled, from the first refresh that started
        // after (calls in flight then may have been a lone replica's), five consecutive list
        // calls on each stream (two pipelines would split them).
        #expect(try await fleet.settled())
        let formed = fleet.upstream.listCalls.value
        for stream in groups {
            var calls: [Int] = []
            while calls.count < 5 {
                let call = FleetThroughNginxTests.listCall(of: try await stream.next(type: "snapshot")) ?? -1
                if call > formed { calls.append(call) }
            }
            #expect(calls == Array(calls[0]..<calls[0] + 5), "list calls \(calls) after call \(formed)")
        }
        #expect(await Self.soleLeader(fleet.replicas) != nil)
        for stream in groups + [rows] { stream.close() }
        await fleet.stop()
    }
}

/// A well-formed stream id that no replica holds.
enum StreamIDs {
    static var random: String { (0..<32).map { _ in String("0123456789abcdef".randomElement()!) }.joined() }
}
