import OpenCombine
import Redis
import Testing
import TributaryTesting

@Suite("Redis pub/sub against a real redis-server")
struct RedisPubSubTests {
    @Test("a subscriber gets .subscribed, then every message's bytes; cancelling unsubscribes")
    func deliveryAndUnsubscribe() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let events = Observed<[RedisChannelEvent]>([])
        let subscription = try await harness.keep { client in
            client.subscribe(to: "news").sink { event in events.update { $0.append(event) } }
        }
        #expect(await events.wait(timeout: .seconds(5)) { $0 == [.subscribed] })
        let payload: [UInt8] = [0, 1, 2, 0xFF, 13, 10]
        #expect(try await harness.reply("PUBLISH", "news", payload) == .integer(1))
        #expect(try await harness.reply("PUBLISH", "news", "second") == .integer(1))
        #expect(await events.wait(timeout: .seconds(5)) { $0.count == 3 })
        #expect(events.value == [.subscribed, .message(payload), .message(Array("second".utf8))])

        try await harness.cancel(subscription)
        #expect(try await subscriberCount(of: "news", harness) == 0)
        #expect(try await harness.reply("PUBLISH", "news", "unheard") == .integer(0))
        #expect(events.value.count == 3)
        await harness.stop()
    }

    @Test("two subscribers of one channel share one SUBSCRIBE; each leaves on its own")
    func sharedChannel() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let first = Observed<[RedisChannelEvent]>([])
        let second = Observed<[RedisChannelEvent]>([])
        let firstSubscription = try await harness.keep { client in
            client.subscribe(to: "shared").sink { event in first.update { $0.append(event) } }
        }
        #expect(await first.wait(timeout: .seconds(5)) { $0 == [.subscribed] })
        let secondSubscription = try await harness.keep { client in
            client.subscribe(to: "shared").sink { event in second.update { $0.append(event) } }
        }
        #expect(second.value == [.subscribed], "joining a subscribed channel is immediate")
        // One receiver at Redis: the client's single pub/sub connection.
        #expect(try await harness.reply("PUBLISH", "shared", "one") == .integer(1))
        #expect(await second.wait(timeout: .seconds(5)) { $0.count == 2 })
        #expect(await first.wait(timeout: .seconds(5)) { $0.count == 2 })

        try await harness.cancel(firstSubscription)
        #expect(try await harness.reply("PUBLISH", "shared", "two") == .integer(1))
        #expect(await second.wait(timeout: .seconds(5)) { $0.count == 3 })
        #expect(first.value.count == 2)

        try await harness.cancel(secondSubscription)
        #expect(try await subscriberCount(of: "shared", harness) == 0)
        await harness.stop()
    }

    @Test("subscribing, leaving and subscribing again in one loop turn ends subscribed")
    func churnInOneTurn() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let events = Observed<[RedisChannelEvent]>([])
        try await harness.keep { client in
            let first = client.subscribe(to: "churn").sink { _ in }
            first.cancel()
            return client.subscribe(to: "churn").sink { event in events.update { $0.append(event) } }
        }
        #expect(await events.wait(timeout: .seconds(5)) { $0 == [.subscribed] })
        #expect(try await harness.reply("PUBLISH", "churn", "still here") == .integer(1))
        #expect(await events.wait(timeout: .seconds(5)) { $0 == [.subscribed, .message(Array("still here".utf8))] })
        await harness.stop()
    }

    /// Redis' own count of a channel's subscribers, once it reaches 0: the UNSUBSCRIBE travels
    /// on the pub/sub connection and the question on the command connection, so the question
    /// is asked again (one round trip each, at most 200) until Redis has caught up.
    private func subscriberCount(of channel: String, _ harness: RedisHarness) async throws -> Int64? {
        var count: Int64?
        for _ in 0..<200 {
            count = try await harness.reply("PUBSUB", "NUMSUB", channel).array?.last?.integer
            if count == 0 { break }
        }
        return count
    }
}
