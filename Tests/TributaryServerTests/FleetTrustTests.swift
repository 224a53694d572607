import Foundation
import Glibc
import EventLoop
@testable import Fleet
import HTTPServer
import UpstreamClient
import Testing
import TributaryTesting

/// Someone who can read and write the fleet's Redis, but lacks its secret, cannot crash,
/// freeze or steer a replica (issue 26). Each attack found by the audit is played here
/// raw, from a RESP client of the test's own (``RawRedisClient``), against two replicas of the
/// real binary and a real `redis-server`: forged states, leases, control requests and
/// replies, reloads, and genuine messages played back. After each, both replicas are up,
/// their subscribers have only valid documents and still receive later snapshots, and
/// `tributary_cluster_rejected_total{reason}` says what was dropped.
@Suite("The fleet trusts only signed messages")
struct FleetTrustTests {
    /// What anyone with access to the fleet's Redis reads there: the names under the key
    /// prefix and the fleet's name, the replicas' ids (in the interest set), their channels.
    struct Attacker {
        let redis: RawRedisClient
        /// `tributary:<fleet>`, read off the lease key.
        let prefix: String

        init(_ fleet: FleetTests.Fleet) async throws {
            redis = try await RawRedisClient(port: fleet.redis.port)
            let lease = try await redis.command("KEYS", "*:lease:groups").strings
            prefix = String(try #require(lease.first, "the lease of groups is in Redis").dropLast(":lease:groups".count))
        }

        func key(_ kind: String, _ subject: String) -> String { "\(prefix):\(kind):\(subject)" }
        var reloads: String { "\(prefix):reload" }

        /// The ids of the replicas with subscribers of groups.
        func replicaIDs() async throws -> [String] {
            try await redis.command("ZRANGE", key("interest", "groups"), "0", "-1").strings
        }

        func publish(_ channel: String, _ message: [UInt8]) async throws {
            _ = try await redis.command([Array("PUBLISH".utf8), Array(channel.utf8), message])
        }

        func set(_ key: String, _ value: [UInt8]) async throws {
            _ = try await redis.command([Array("SET".utf8), Array(key.utf8), value])
        }

        /// How many connections are subscribed to `channel` (a follower's relay is one).
        func subscribers(of channel: String) async throws -> Int64 {
            guard case .array(let reply?) = try await redis.command("PUBSUB", "NUMSUB", channel), reply.count == 2 else { return -1 }
            return reply[1].integer ?? -1
        }

        /// Waits (≤ 10 s) until no replica follows `channel`: its follower rests.
        func unfollowed(_ channel: String) async -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if (try? await subscribers(of: channel)) == 0 { return true }
                try? await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
    }

    /// The audit's message (the largest `producedAt`, a body that is not JSON) in the format
    /// states had before they were sealed, and as a forger's best guess at a sealed one (64
    /// hex digits where the MAC goes).
    static let forgedStates: [[UInt8]] = [
        Array("v1 18446744073709551615\nnull\nNOT JSON </script> {\"".utf8),
        Array((String(repeating: "0", count: 64) + " 18446744073709551615 null\nNOT JSON </script> {\"").utf8),
    ]

    /// `payload` sealed as docs/fleet.md describes, with `secret`: what a replica with the
    /// secret (a faulty one) would write. Computed here, independently of the service.
    static func sealed(_ payload: String, at time: UInt64, for context: String, secret: String = FleetTests.secret) -> [UInt8] {
        let signed = Array("\(time) \(payload)".utf8)
        return MessageAuthentication.sha256Hex(key: Array(secret.utf8), message: Array(context.utf8) + [0] + signed) + [UInt8(ascii: " ")] + signed
    }

    static var now: UInt64 { UInt64(Date().timeIntervalSince1970 * 1000) }

    /// `replica`'s count of what it dropped for `reason`.
    static func rejected(_ replica: ServiceProcess, _ reason: String) async throws -> Int {
        Int(try await FleetTests.metric(replica, "tributary_cluster_rejected_total", #"reason="\#(reason)""#) ?? -1)
    }

    /// What `replicas` together dropped for any of `reasons`.
    static func rejected(_ reasons: [String], on replicas: [ServiceProcess]) async throws -> Int {
        var total = 0
        for replica in replicas {
            for reason in reasons { total += try await rejected(replica, reason) }
        }
        return total
    }

    /// Waits (≤ 10 s) until `replicas` together count at least `count` drops for `reason`
    /// (or any of `reasons`): only /metrics tells, so this asks every 50 ms.
    static func rejections(_ reason: String, _ reasons: String..., atLeast count: Int, on replicas: [ServiceProcess]) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if let total = try? await rejected([reason] + reasons, on: replicas), total >= count { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits (≤ 10 s) until `replica` has no subscriber of groups left.
    static func noSubscribers(_ replica: ServiceProcess) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if (try? await FleetTests.metric(replica, "tributary_sse_subscribers", #"resource="groups""#)) == 0 { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// Waits (≤ 10 s) until exactly one of `replicas` holds the lease of groups.
    static func oneLeader(_ replicas: [ServiceProcess]) async -> Bool {
        await FleetTests.soleLeader(replicas) != nil
    }

    /// The next snapshot of a /groups stream, every event on the way checked: no error, and
    /// a snapshot is a valid JSON document of the upstream's (never a forged one).
    static func nextValidSnapshot(_ stream: SSEClient) async throws -> ServerSentEvent {
        while true {
            let event = try await stream.next()
            #expect(event.type != "error", "\(event.data)")
            guard event.type == "snapshot" else { continue }
            #expect((try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) != nil, "a snapshot that is not JSON: \(event.data.prefix(80))")
            #expect(!event.data.contains("forged") && !event.data.contains("NOT JSON"))
            #expect(FleetThroughNginxTests.listCall(of: event) != nil, "not the upstream's document: \(event.data.prefix(80))")
            return event
        }
    }

    /// The next snapshot of `stream` whose list call is above `call`.
    static func snapshot(after call: Int, on stream: SSEClient) async throws -> Int {
        while true {
            let shown = FleetThroughNginxTests.listCall(of: try await nextValidSnapshot(stream)) ?? 0
            if shown > call { return shown }
        }
    }

    @Test("forged states (the largest producedAt, a body that is not JSON, 9 MiB, a time ahead, on the channel and as the latest) are dropped and counted; when the follower later runs the pipeline itself, it stays up")
    func forgedStates() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h")
        var streams = [
            try await SSEClient(port: fleet.replicas[0].port, path: "/groups"),
            try await SSEClient(port: fleet.replicas[1].port, path: "/groups"),
        ]
        for stream in streams { _ = try await Self.nextValidSnapshot(stream) }
        let leader = try #require(await FleetTests.soleLeader(fleet.replicas))
        let follower = 1 - leader
        let attacker = try await Attacker(fleet)
        let channel = attacker.key("states", "groups")

        // Without the secret: the old format, a guessed seal, a message past maxResponseBytes.
        for message in Self.forgedStates { try await attacker.publish(channel, message) }
        let huge = Array((String(repeating: "0", count: 64) + " 1 null\n{\"a\":\"").utf8) + Array(repeating: UInt8(ascii: "x"), count: 9 << 20) + Array("\"}".utf8)
        try await attacker.publish(channel, huge)
        // With the secret (a faulty replica): a time a minute ahead, a body that is not JSON.
        try await attacker.publish(channel, Self.sealed(#"null\#n{"forged":true}"#, at: Self.now + 60_000, for: channel))
        try await attacker.publish(channel, Self.sealed("null\nNOT JSON </script> {\"", at: Self.now, for: channel))
        for (reason, count) in [("malformed", 2), ("mac", 1), ("too_large", 1), ("future", 1)] {
            #expect(await Self.rejections(reason, atLeast: count, on: [fleet.replicas[follower]]), "\(reason)")
        }

        // Later snapshots reach both replicas' subscribers, valid.
        var call = fleet.upstream.listCalls.value
        #expect(try await TestHTTP.request(port: fleet.replicas[follower].port, "POST", "/groups/reload").status == 202)
        for stream in streams { #expect(try await Self.snapshot(after: call, on: stream) == call + 1) }

        // As the latest, read by a follower whose first subscriber arrives: a guessed seal,
        // then 9 MiB (not even read: its length says enough).
        for (latest, reason) in [(Self.forgedStates[1], "mac"), (huge, "too_large")] {
            try await attacker.set(attacker.key("latest", "groups"), latest)
            streams[follower].close()
            // Its subscriber gone, the follower rests (unsubscribed from the states), and reads
            // the latest again when it follows for its next one. Its streams counting none is
            // not enough: the role follows the interest a lease round trip later.
            #expect(await Self.noSubscribers(fleet.replicas[follower]))
            #expect(await attacker.unfollowed(channel), "the follower rests, and follows again for its next subscriber")
            let before = try await Self.rejected(fleet.replicas[follower], reason)
            streams[follower] = try await SSEClient(port: fleet.replicas[follower].port, path: "/groups")
            _ = try await Self.nextValidSnapshot(streams[follower])
            #expect(await Self.rejections(reason, atLeast: before + 1, on: [fleet.replicas[follower]]), "the forged latest")
        }

        // Redis away: the follower runs the pipeline itself (where the audit's producedAt
        // overflowed), then the fleet forms again.
        call = fleet.upstream.listCalls.value
        fleet.redis.kill()
        _ = try await Self.snapshot(after: call, on: streams[follower])
        try await fleet.redis.restart()
        for replica in fleet.replicas {
            #expect(await replica.output.wait(timeout: .seconds(15)) { $0.components(separatedBy: "cluster: joined the fleet").count == 3 })
        }
        #expect(await Self.oneLeader(fleet.replicas))
        call = fleet.upstream.listCalls.value
        #expect(try await TestHTTP.request(port: fleet.replicas[leader].port, "POST", "/groups/reload").status == 202)
        for stream in streams { _ = try await Self.snapshot(after: call, on: stream) }
        #expect(fleet.replicas.allSatisfy { $0.isRunning })
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    @Test("a forged lease (a replica's own id, a guessed seal, a key of another type) counts as free, and a genuine one played back after its holder stopped goes stale: one leader, subscribers served")
    func forgedLeases() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2, refresh: "300ms")
        let streams = [
            try await SSEClient(port: fleet.replicas[0].port, path: "/groups"),
            try await SSEClient(port: fleet.replicas[1].port, path: "/groups"),
        ]
        for stream in streams { _ = try await Self.nextValidSnapshot(stream) }
        let attacker = try await Attacker(fleet)
        let lease = attacker.key("lease", "groups")
        let ids = try await attacker.replicaIDs()
        try #require(ids.count == 2)

        // The audit's attack: the lease SET to a replica's own id, readable in the interest
        // set; then a guessed seal naming a replica that does not exist.
        let nobody = StreamIDs.random
        for forged in [ids[0], ids[1], String(repeating: "0", count: 64) + " \(Self.now) \(nobody)"] {
            let dropped = try await Self.rejected(["malformed", "mac"], on: fleet.replicas)
            try await attacker.set(lease, Array(forged.utf8))
            #expect(await Self.rejections("malformed", "mac", atLeast: dropped + 1, on: fleet.replicas), "the forged lease \(forged.prefix(20))… was read and dropped")
            #expect(await Self.oneLeader(fleet.replicas))
            let call = fleet.upstream.listCalls.value
            for stream in streams { _ = try await Self.snapshot(after: call, on: stream) }
        }
        // A key of another type: no replica can read it as a lease, and it is replaced.
        _ = try await attacker.redis.command("DEL", lease)
        _ = try await attacker.redis.command("LPUSH", lease, ids[0])
        var call = fleet.upstream.listCalls.value
        for stream in streams { _ = try await Self.snapshot(after: call, on: stream) }
        #expect(try await attacker.redis.command("TYPE", lease).text == "string")
        #expect(await Self.oneLeader(fleet.replicas))

        // The holder's genuine value, played back forever (no TTL) while it is stopped.
        let holder = try #require(await FleetTests.soleLeader(fleet.replicas))
        let other = 1 - holder
        let genuine = try #require(try await attacker.redis.command("GET", lease).bytes)
        kill(fleet.replicas[holder].pid, SIGSTOP)
        try await attacker.set(lease, genuine)
        call = fleet.upstream.listCalls.value
        _ = try await Self.snapshot(after: call, on: streams[other])
        #expect(try await Self.rejected(fleet.replicas[other], "stale") >= 1)
        kill(fleet.replicas[holder].pid, SIGCONT)
        #expect(await Self.oneLeader(fleet.replicas))
        call = fleet.upstream.listCalls.value
        for stream in streams { _ = try await Self.snapshot(after: call, on: stream) }
        #expect(fleet.replicas.allSatisfy { $0.isRunning })
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    @Test("forged and played-back control requests reach no stream; forged and played-back replies answer no request")
    func forgedControl() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2)
        let (holder, sender) = (fleet.replicas[0], fleet.replicas[1])
        let media = MediaFixture(topics: ["a", "b"])
        let rows = try await SSEClient(port: holder.port, path: "/rows")
        let id = try await rows.announcedID()
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON())
        let groups = try await SSEClient(port: sender.port, path: "/groups")  // puts the replicas' names in Redis
        _ = try await Self.nextValidSnapshot(groups)
        let attacker = try await Attacker(fleet)
        // Where the stream is: its location, under its digest (the attacker may try every
        // key it lists), whose value ends with the holder's id.
        let digest = Digest.sha256Hex(Array(id.utf8))
        let location = try #require(try await attacker.redis.command("GET", attacker.key("stream", digest)).text)
        let holderID = String(location.split(separator: " ").last!)
        let senderID = try #require(try await attacker.replicaIDs().first { $0 != holderID })
        let holderChannel = attacker.key("replica", holderID)
        let senderChannel = attacker.key("replica", senderID)

        // Forged requests (for topic b): the old format, a guessed seal.
        let request = #"{"kind":"control","tag":1,"from":"\#(senderID)","stream":"\#(digest)","trigger":"loadMore","arguments":{"topic":"b"}}"#
        try await attacker.publish(holderChannel, Array(request.utf8))
        try await attacker.publish(holderChannel, Array((String(repeating: "0", count: 64) + " \(Self.now) " + request).utf8))
        #expect(await Self.rejections("malformed", atLeast: 1, on: [holder]))
        #expect(await Self.rejections("mac", atLeast: 1, on: [holder]))

        // A genuine request (topic a) and its reply, overheard; the next snapshot is that
        // request's alone: no forged one was applied before it.
        let spy = try await RawRedisClient(port: fleet.redis.port)
        _ = try await spy.command("SUBSCRIBE", holderChannel, senderChannel)
        #expect(try await TestHTTP.request(port: sender.port, "POST", "/streams/\(id)/triggers/loadMore?topic=a").status == 202)
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON(loaded: ["a": 2]))
        let overheardRequest = try await spy.nextMessage()
        let overheardReply = try await spy.nextMessage()
        // Played back, it is not applied again: the next snapshot is the next trigger's (topic b).
        try await attacker.publish(holderChannel, overheardRequest)
        #expect(await Self.rejections("replayed", atLeast: 1, on: [holder]))
        #expect(try await TestHTTP.request(port: sender.port, "POST", "/streams/\(id)/triggers/loadMore?topic=b").status == 202)
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON(loaded: ["a": 2, "b": 2]))

        // A request the holder cannot answer (stopped): replies guessed for the first hundred
        // tags (they counted up from 1), and the overheard reply, sent until the request
        // ends, do not answer it.
        kill(holder.pid, SIGSTOP)
        let answered = Observed<String?>(nil)  // "status code"
        let port = sender.port
        let waiting = Task {
            let answer = try? await TestHTTP.request(port: port, "POST", "/streams/\(id)/triggers/loadMore?topic=b")
            answered.update { $0 = answer.map { "\($0.status) \($0.error?.code ?? "")" } ?? "no answer" }
        }
        var forgedReplies = 0
        while answered.value == nil && forgedReplies < 100_000 {
            for tag in 0..<100 { try await attacker.publish(senderChannel, Array(#"{"kind":"reply","tag":\#(tag),"status":202}"#.utf8)) }
            try await attacker.publish(senderChannel, overheardReply)
            forgedReplies += 100
        }
        await waiting.value
        #expect(answered.value == "504 cluster_timeout", "\(forgedReplies) forged replies sent while it waited")
        #expect(await Self.rejections("malformed", atLeast: forgedReplies, on: [sender]))
        kill(holder.pid, SIGCONT)
        #expect(try await TestHTTP.request(port: holder.port, "POST", "/streams/\(id)/triggers/loadMore?topic=a").status == 202)
        #expect(try await rows.next(type: "snapshot").data == media.rowsJSON(loaded: ["a": 3, "b": 2]), "the request held up while the holder was stopped was not applied")
        #expect(fleet.replicas.allSatisfy { $0.isRunning })
        spy.close()
        rows.close()
        groups.close()
        await fleet.stop()
    }

    @Test("forged and played-back reloads refresh nothing")
    func forgedReloads() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h")
        let streams = [
            try await SSEClient(port: fleet.replicas[0].port, path: "/groups"),
            try await SSEClient(port: fleet.replicas[1].port, path: "/groups"),
        ]
        for stream in streams { _ = try await Self.nextValidSnapshot(stream) }
        let attacker = try await Attacker(fleet)
        let calls = fleet.upstream.listCalls.value

        try await attacker.publish(attacker.reloads, Array("groups".utf8))
        try await attacker.publish(attacker.reloads, Array((String(repeating: "0", count: 64) + " \(Self.now) 0000000000000001 groups").utf8))
        #expect(await Self.rejections("malformed", atLeast: 2, on: fleet.replicas), "each replica drops the old format")
        #expect(await Self.rejections("mac", atLeast: 2, on: fleet.replicas), "each replica drops the guessed seal")
        #expect(fleet.upstream.listCalls.value == calls)

        let spy = try await RawRedisClient(port: fleet.redis.port)
        _ = try await spy.command("SUBSCRIBE", attacker.reloads)
        #expect(try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/groups/reload").status == 202)
        for stream in streams { #expect(try await Self.snapshot(after: calls, on: stream) == calls + 1) }
        try await attacker.publish(attacker.reloads, try await spy.nextMessage())
        #expect(await Self.rejections("replayed", atLeast: 2, on: fleet.replicas))
        // Nothing ran in between: the next reload's snapshot is the next list call.
        #expect(try await TestHTTP.request(port: fleet.replicas[0].port, "POST", "/groups/reload").status == 202)
        for stream in streams { #expect(try await Self.snapshot(after: calls + 1, on: stream) == calls + 2) }
        #expect(fleet.replicas.allSatisfy { $0.isRunning })
        spy.close()
        for stream in streams { stream.close() }
        await fleet.stop()
    }

    @Test("two fleets with different secrets on one Redis and one key prefix ignore each other: a leader each, their own reloads and streams, nothing dropped")
    func twoFleetsOneRedis() async throws {
        let blue = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h")
        let green = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h", redis: blue.redis, secret: "green-fleet-secret-9e2c4d1a7b")
        let fleets = [blue, green]
        var streams: [[SSEClient]] = []
        for fleet in fleets {
            var own: [SSEClient] = []
            for replica in fleet.replicas { own.append(try await SSEClient(port: replica.port, path: "/groups")) }
            for stream in own { _ = try await Self.nextValidSnapshot(stream) }
            streams.append(own)
        }
        for fleet in fleets { #expect(await Self.oneLeader(fleet.replicas)) }

        // A reload on each fleet refreshes its own subscribers, once, and not the other's.
        for (index, fleet) in fleets.enumerated() {
            let calls = fleets.map(\.upstream.listCalls.value)
            #expect(try await TestHTTP.request(port: fleet.replicas[1].port, "POST", "/groups/reload").status == 202)
            for stream in streams[index] { #expect(try await Self.snapshot(after: calls[index], on: stream) == calls[index] + 1) }
        }
        for (index, fleet) in fleets.enumerated() {
            let calls = fleet.upstream.listCalls.value
            #expect(try await TestHTTP.request(port: fleet.replicas[0].port, "POST", "/groups/reload").status == 202)
            for stream in streams[index] {
                #expect(try await Self.snapshot(after: calls - 1, on: stream) == calls + 1, "the other fleet's reload did not refresh this one")
            }
        }

        // A stream of one fleet is unknown to the other.
        let rows = try await SSEClient(port: blue.replicas[0].port, path: "/rows")
        let id = try await rows.announcedID()
        let elsewhere = try await TestHTTP.request(port: green.replicas[0].port, "POST", "/streams/\(id)/triggers/reload")
        #expect(elsewhere.status == 404)
        #expect(try await TestHTTP.request(port: blue.replicas[1].port, "POST", "/streams/\(id)/triggers/reload").status == 202)

        for replica in blue.replicas + green.replicas {
            for reason in ["mac", "future", "stale", "replayed", "malformed", "too_large"] {
                #expect(try await Self.rejected(replica, reason) == 0, "\(reason)")
            }
        }
        rows.close()
        for stream in streams.joined() { stream.close() }
        await green.stop()
        await blue.stop()
    }
}
