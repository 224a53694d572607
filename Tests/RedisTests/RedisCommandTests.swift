import OpenCombine
import Redis
import Testing
import TributaryTesting

@Suite("Redis commands against a real redis-server")
struct RedisCommandTests {
    @Test("SET then GET round-trips arbitrary bytes; replies decode to their kinds")
    func binaryRoundTrip() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let bytes = (0...255).map(UInt8.init) + [0, 0, 13, 10, 36, 42]
        #expect(try await harness.reply("SET", "binary", bytes) == .status("OK"))
        #expect(try await harness.reply("GET", "binary") == .string(bytes))
        #expect(try await harness.reply("GET", "missing") == .null)
        #expect(try await harness.reply("INCR", "counter") == .integer(1))
        #expect(try await harness.reply("RPUSH", "list", "a", "", [0xFF]) == .integer(3))
        #expect(try await harness.reply("LRANGE", "list", 0, -1) == .array([.string(Array("a".utf8)), .string([]), .string([0xFF])]))
        await harness.stop()
    }

    @Test("an error reply is a reply (WRONGTYPE), and the connection goes on")
    func errorReply() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        _ = try await harness.reply("SET", "plain", "value")
        let reply = try await harness.reply("LPUSH", "plain", "x")
        #expect(reply.errorMessage?.hasPrefix("WRONGTYPE") == true, "\(reply)")
        #expect(try await harness.reply("GET", "plain") == .string(Array("value".utf8)))
        await harness.stop()
    }

    @Test("1,000 commands sent in one loop turn are pipelined and answered in order")
    func pipelinedInOrder() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let completed = Observed<[(id: Int, reply: RedisReply?)]>([])
        try await harness.run { client in
            for id in 0..<1000 {
                let command = id.isMultiple(of: 2) ? RedisCommand("INCR", "sequence") : RedisCommand("ECHO", "echo \(id)")
                client.send(command) { outcome in completed.update { $0.append((id, try? outcome.get())) } }
            }
        }
        #expect(await completed.wait(timeout: .seconds(10)) { $0.count == 1000 })
        #expect(completed.value.map(\.id) == Array(0..<1000))
        for (id, reply) in completed.value {
            let expected: RedisReply = id.isMultiple(of: 2) ? .integer(Int64(id / 2 + 1)) : .string(Array("echo \(id)".utf8))
            #expect(reply == expected)
        }
        await harness.stop()
    }

    @Test("the command publisher emits the reply and finishes; a cancelled command's reply is dropped in its place")
    func publisherAndCancel() async throws {
        let redis = try await RedisServerProcess.start()
        // No health check: its PING would wait behind the BLPOP below and take the client down.
        let harness = try await RedisHarness(redis.url, RedisClient.Configuration(healthCheckInterval: nil))
        #expect(await harness.connected())
        _ = try await harness.reply("SET", "k", "v")
        let events = Observed<[String]>([])
        try await harness.keep { client in
            client.publisher(for: RedisCommand("GET", "k"))
                .sink(receiveCompletion: { completion in events.update { $0.append("\(completion)") } },
                      receiveValue: { reply in events.update { $0.append(reply.text ?? "?") } })
        }
        #expect(await events.wait(timeout: .seconds(5)) { $0 == ["v", "finished"] })

        // BLPOP holds the reply back for 2 s (ample for the cancel to come first, however busy
        // the machine); cancelled meanwhile, its reply must not be taken for the ECHO's that
        // follows on the same connection (and waits behind it: a deadline of its own).
        let slow = try await harness.keep { client in
            client.publisher(for: RedisCommand("BLPOP", "empty-list", "2", timeout: .seconds(5)))
                .sink(receiveCompletion: { _ in events.update { $0.append("blpop completed") } },
                      receiveValue: { _ in events.update { $0.append("blpop answered") } })
        }
        try await harness.cancel(slow)
        let after = try await harness.outcome(RedisCommand("ECHO", "after", timeout: .seconds(5)))
        #expect((try? after.get()) == .string(Array("after".utf8)))
        #expect(events.value == ["v", "finished"])
        await harness.stop()
    }

    @Test("pub/sub and MONITOR commands are refused as commands; the connection stays usable")
    func refusedCommands() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        for name in ["SUBSCRIBE", "psubscribe", "UNSUBSCRIBE", "MONITOR"] {
            #expect(try await harness.outcome(RedisCommand(name, "x")).failureKind == .invalidCommand)
        }
        #expect(try await harness.outcome(RedisCommand(arguments: [])).failureKind == .invalidCommand)
        #expect(try await harness.reply("PING") == .status("PONG"))
        await harness.stop()
    }

    @Test("AUTH and SELECT run on every connection: the password logs in, the database is the URL's")
    func authAndSelect() async throws {
        let redis = try await RedisServerProcess.start(password: "s3cret")
        let inDatabase3 = try await RedisHarness("redis://:s3cret@127.0.0.1:\(redis.port)/3")
        let inDatabase0 = try await RedisHarness("redis://:s3cret@127.0.0.1:\(redis.port)")
        #expect(await inDatabase3.connected())
        #expect(await inDatabase0.connected())
        _ = try await inDatabase3.reply("SET", "where", "three")
        #expect(try await inDatabase3.reply("GET", "where") == .string(Array("three".utf8)))
        #expect(try await inDatabase0.reply("GET", "where") == .null)
        await inDatabase3.stop()
        await inDatabase0.stop()

        let wrong = try await RedisHarness(
            "redis://:wrong@127.0.0.1:\(redis.port)",
            .init(reconnectDelay: .milliseconds(50) ... .milliseconds(200)))
        #expect(await wrong.failures.wait(timeout: .seconds(5)) { !$0.isEmpty })
        let failure = wrong.failures.value.first
        #expect(failure?.kind == .connectFailed)
        #expect(failure?.detail.contains("AUTH") == true, "\(String(describing: failure))")
        #expect(wrong.states.value == [.disconnected])
        #expect(try await wrong.outcome(RedisCommand("PING")).failureKind == .unavailable)
        await wrong.stop()
    }

    @Test("host names are resolved on the loop; IPv6 literals connect")
    func namesAndIPv6() async throws {
        let redis = try await RedisServerProcess.start()
        let byName = try await RedisHarness("redis://localhost:\(redis.port)")
        #expect(await byName.connected())
        #expect(try await byName.reply("PING") == .status("PONG"))
        await byName.stop()

        let overIPv6 = try await RedisHarness("redis://[::1]:\(redis.port)")
        #expect(await overIPv6.connected())
        #expect(try await overIPv6.reply("CLIENT", "INFO").text?.contains("laddr=[::1]") == true)
        await overIPv6.stop()
    }
}
