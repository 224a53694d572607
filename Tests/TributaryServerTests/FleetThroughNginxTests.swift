import Foundation
import Testing
import TributaryTesting

/// The fleet as it is deployed: three replicas of the binary and a real `redis-server`
/// behind Debian's nginx, configured by the repository's own template
/// (`deploy/nginx/tributary.conf.template`). Every client connection goes to nginx, which
/// spreads them round-robin; which replica served what is read from nginx's access log
/// (`upstream=`) and from the replicas' `/metrics`, never assumed. The replicas, Redis and
/// the counting upstream are those of ``FleetTests``.
@Suite("The fleet behind nginx, as deployed", .serialized)
struct FleetThroughNginxTests {
    /// A fleet with nginx in front of it.
    struct Deployment {
        let fleet: FleetTests.Fleet
        let nginx: NginxProcess

        static func start(refresh: String = "300ms", leaseTTL: String = "1s") async throws -> Deployment {
            let fleet = try await FleetTests.Fleet.start(replicas: 3, refresh: refresh, leaseTTL: leaseTTL)
            let nginx = try await NginxProcess.start(replicas: fleet.replicas.map(\.port))
            return Deployment(fleet: fleet, nginx: nginx)
        }

        var replicas: [ServiceProcess] { fleet.replicas }

        /// Opens event streams of `path` through nginx until every replica holds at least one
        /// (round-robin places three on three replicas; a few more are allowed should other
        /// requests have moved its turn), and says which replica holds each.
        func streamsOnEveryReplica(_ path: String, resource: String) async throws -> [(client: SSEClient, replica: Int)] {
            var streams: [(client: SSEClient, replica: Int)] = []
            var counts = Array(repeating: 0, count: replicas.count)
            while counts.contains(0) && streams.count < 2 * replicas.count {
                let client = try await SSEClient(port: nginx.port, path: path)
                _ = try await client.next(type: "stream")
                let now = try await subscribers(resource)
                guard let replica = now.indices.first(where: { now[$0] > counts[$0] }) else {
                    throw TestClientError.malformed("a stream through nginx is on no replica: \(now)")
                }
                counts = now
                streams.append((client, replica))
            }
            #expect(!counts.contains(0), "streams per replica: \(counts)")
            return streams
        }

        /// Each replica's live streams of `resource` (its `tributary_sse_subscribers`).
        func subscribers(_ resource: String) async throws -> [Int] {
            var counts: [Int] = []
            for replica in replicas {
                counts.append(Int(try await FleetTests.metric(replica, "tributary_sse_subscribers", #"resource="\#(resource)""#) ?? 0))
            }
            return counts
        }

        /// The index of the replica listening on `port`.
        func replica(onPort port: UInt16) -> Int? { replicas.firstIndex { $0.port == port } }

        func stop() async {
            nginx.stop()
            await fleet.stop()
        }
    }

    /// The upstream's list call that a `/groups` snapshot shows (``FleetTests/CountingUpstream``
    /// names its group after the call).
    static func listCall(of snapshot: ServerSentEvent) -> Int? {
        listCall(in: snapshot.data)
    }

    /// The list call a `/groups` document shows.
    static func listCall(in document: String) -> Int? {
        document.firstMatch(of: /"name":"call (\d+)"/).flatMap { Int($0.1) }
    }

    @Test("a trigger sent through nginx lands on another replica than the stream's and reaches the stream; an unknown stream is 404")
    func controlFromAnotherReplica() async throws {
        let deployment = try await Deployment.start()
        let media = MediaFixture(topics: ["a", "b"])
        let rows = try await SSEClient(port: deployment.nginx.port, path: "/rows")
        let id = try await rows.announcedID()
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON())
        let holder = try #require(try await deployment.subscribers("rows").firstIndex(of: 1))

        // Round-robin sends the next request to the next replica; loadMore again until one
        // landed elsewhere (every one must reach the stream wherever it landed).
        var loaded = ["a": 1, "b": 1]
        var servedBy: [Int] = []
        let triggers = "/streams/\(id)/triggers/"
        for topic in ["a", "b", "a"] where !servedBy.contains(where: { $0 != holder }) {
            let answer = try await TestHTTP.request(port: deployment.nginx.port, "POST", triggers + "loadMore?topic=\(topic)")
            #expect(answer.status == 202, "\(answer.text)")
            loaded[topic, default: 1] += 1
            #expect(try await rows.next(type: "snapshot").data == media.rowsJSON(loaded: loaded))
            // nginx writes a request's access line once the answer went out.
            let sent = servedBy.count + 1
            #expect(await deployment.nginx.output.wait(timeout: .seconds(5)) { NginxProcess.servingPorts(in: $0, ofRequestsContaining: triggers).count == sent })
            servedBy = deployment.nginx.servingPorts(ofRequestsContaining: triggers).compactMap(deployment.replica(onPort:))
        }
        #expect(servedBy.contains { $0 != holder }, "the stream is on replica \(holder); the triggers landed on \(servedBy)")
        // The replica that served the trigger says so in its own access log, too (read from
        // its standard error as it comes), naming the stream by the first digits of its id.
        for replica in Set(servedBy) {
            #expect(await deployment.replicas[replica].output.wait(timeout: .seconds(5)) { $0.contains("POST /streams/\(id.prefix(8))…/triggers/loadMore") })
            #expect(!deployment.replicas[replica].output.value.contains(id))
        }

        let unknown = try await TestHTTP.request(port: deployment.nginx.port, "POST", "/streams/\(StreamIDs.random)/triggers/reload")
        #expect(unknown.status == 404)
        #expect(unknown.error?.code == "unknown_stream")
        rows.close()
        await deployment.stop()
    }

    @Test("a reload sent through nginx refreshes the subscribers on all three replicas, with one list call")
    func reloadReachesEveryReplica() async throws {
        let deployment = try await Deployment.start(refresh: "1h")
        let streams = try await deployment.streamsOnEveryReplica("/groups", resource: "groups")
        var first: [String?] = []
        for stream in streams { first.append(try await stream.client.next(type: "snapshot").id) }
        let calls = deployment.fleet.upstream.listCalls.value

        #expect(try await TestHTTP.request(port: deployment.nginx.port, "POST", "/groups/reload").status == 202)
        for (index, stream) in streams.enumerated() {
            let snapshot = try await stream.client.next(type: "snapshot")
            #expect(snapshot.id != first[index], "the stream on replica \(stream.replica) got the reload")
            #expect(Self.listCall(of: snapshot) == calls + 1)
        }
        #expect(deployment.fleet.upstream.listCalls.value == calls + 1, "one refresh, run by the lease holder")
        for stream in streams { stream.client.close() }
        await deployment.stop()
    }

    @Test("with subscribers on all three replicas, every refresh is one list call: each stream sees the same consecutive calls")
    func oneListCallPerRefresh() async throws {
        let deployment = try await Deployment.start(refresh: "300ms")
        let streams = try await deployment.streamsOnEveryReplica("/groups", resource: "groups")
        for stream in streams { _ = try await stream.client.next(type: "snapshot") }
        // Three pipelines would interleave their calls: each stream would see every third.
        var seen: [[Int]] = []
        for stream in streams {
            var calls: [Int] = []
            while calls.count < 5 { calls.append(Self.listCall(of: try await stream.client.next(type: "snapshot")) ?? -1) }
            seen.append(calls)
        }
        for (index, calls) in seen.enumerated() {
            #expect(calls == Array(calls[0]..<calls[0] + 5), "replica \(streams[index].replica)'s stream saw list calls \(calls)")
        }
        let common = seen.dropFirst().reduce(Set(seen[0])) { $0.intersection($1) }
        #expect(common.count >= 3, "the streams saw the same refreshes: \(seen)")
        #expect(await FleetTests.soleLeader(deployment.replicas) != nil)
        for stream in streams { stream.client.close() }
        await deployment.stop()
    }

    @Test("the lease holder killed with SIGKILL: streams on the others get the next snapshot within leaseTTL + refresh + 1 s; a reconnect through nginx lands on a survivor")
    func failoverBehindNginx() async throws {
        let (leaseTTL, refresh) = (Duration.seconds(1), Duration.milliseconds(400))
        let deployment = try await Deployment.start(refresh: "400ms", leaseTTL: "1s")
        let streams = try await deployment.streamsOnEveryReplica("/groups", resource: "groups")
        for stream in streams { _ = try await stream.client.next(type: "snapshot") }
        let leader = try #require(await FleetTests.soleLeader(deployment.replicas))
        let survivors = streams.filter { $0.replica != leader }
        let orphans = streams.filter { $0.replica == leader }

        let callsAtKill = deployment.fleet.upstream.listCalls.value
        deployment.replicas[leader].kill()
        let killed = ContinuousClock.now
        for stream in survivors {
            while true {
                let event = try await stream.client.next()
                #expect(event.type != "error", "a survivor's stream saw \(event.data)")
                if event.type == "snapshot", let call = Self.listCall(of: event), call > callsAtKill { break }
            }
            let elapsed = ContinuousClock.now - killed
            #expect(elapsed <= leaseTTL + refresh + .seconds(1), "replica \(stream.replica)'s stream had a new snapshot \(elapsed) after the kill")
        }
        #expect(await FleetTests.soleLeader(deployment.replicas.enumerated().filter { $0.offset != leader }.map(\.element)) != nil)

        // The dead replica's streams end at nginx; the browser reconnects, through nginx, to a survivor.
        for stream in orphans { #expect(await stream.client.connection.waitForClose(within: .seconds(5))) }
        let reconnected = try await SSEClient(port: deployment.nginx.port, path: "/groups")
        #expect(reconnected.head.status == 200)
        #expect(Self.listCall(of: try await reconnected.next(type: "snapshot")).map { $0 > callsAtKill } == true)
        reconnected.close()
        for stream in streams { stream.client.close() }
        await deployment.stop()
    }

    @Test("Redis stopped: the streams behind nginx keep their refreshes; Redis restarted: the fleet forms again around the same streams")
    func redisStoppedAndRestarted() async throws {
        let deployment = try await Deployment.start(refresh: "300ms")
        let streams = try await deployment.streamsOnEveryReplica("/groups", resource: "groups")
        for stream in streams { _ = try await stream.client.next(type: "snapshot") }
        let rows = try await SSEClient(port: deployment.nginx.port, path: "/rows")
        let rowsID = try await rows.announcedID()
        _ = try await rows.next(type: "snapshot")

        deployment.fleet.redis.stop()
        for replica in deployment.replicas {
            #expect(await replica.output.wait(timeout: .seconds(5)) { $0.contains("cluster: lost Redis") })
        }
        for stream in streams {
            for _ in 0..<3 { #expect(try await stream.client.next().type == "snapshot", "replica \(stream.replica)'s stream refreshes alone") }
        }

        try await deployment.fleet.redis.restart()
        for replica in deployment.replicas {
            #expect(await replica.output.wait(timeout: .seconds(15)) { $0.components(separatedBy: "cluster: joined the fleet").count == 3 })
        }
        // The same connections, one pipeline again: once the roles are settled, from the first
        // refresh that started after (calls already in flight then may have been a lone
        // replica's), consecutive list calls on every stream.
        #expect(try await deployment.fleet.settled())
        let formed = deployment.fleet.upstream.listCalls.value
        for stream in streams {
            var calls: [Int] = []
            while calls.count < 3 {
                let call = Self.listCall(of: try await stream.client.next(type: "snapshot")) ?? -1
                if call > formed { calls.append(call) }
            }
            #expect(calls == Array(calls[0]..<calls[0] + 3), "replica \(stream.replica)'s stream saw list calls \(calls) after call \(formed)")
        }
        // Control through nginx reaches the rows stream wherever the request lands.
        for _ in deployment.replicas {
            #expect(try await TestHTTP.request(port: deployment.nginx.port, "POST", "/streams/\(rowsID)/triggers/reload").status == 202)
        }
        for stream in streams { stream.client.close() }
        rows.close()
        await deployment.stop()
    }
}
