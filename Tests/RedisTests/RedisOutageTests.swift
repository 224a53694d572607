import EventLoop
import OpenCombine
import Redis
import Testing
import TributaryTesting

@Suite("Redis outages: crashed, frozen, unreachable; the client dropped under load")
struct RedisOutageTests {
    /// Quick reconnects, long command deadlines (so a fast failure is visibly not a timeout).
    static let quick = RedisClient.Configuration(
        commandTimeout: .seconds(5), connectTimeout: .seconds(1),
        reconnectDelay: .milliseconds(50) ... .milliseconds(400), healthCheckInterval: nil)

    @Test("Redis killed and restarted on its port: disconnected, then connected, once each; commands fail fast meanwhile; subscriptions come back")
    func killAndRestart() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url, Self.quick)
        #expect(await harness.connected())
        let events = try await harness.subscribe("control")
        #expect(await events.wait(timeout: .seconds(5)) { $0 == [.subscribed] })

        redis.kill()
        #expect(await harness.states.wait(timeout: .seconds(5)) { $0.last == .disconnected })
        let (during, took) = try await harness.timedOutcome(RedisCommand("GET", "k"))
        #expect(during.failureKind == .unavailable)
        #expect(took < .seconds(2), "failed at once, not after the 5 s deadline: \(took) on the loop")
        #expect(await harness.failures.wait(timeout: .seconds(5)) { $0.contains { $0.kind == .connectionLost } })

        try await redis.restart()
        #expect(await harness.connected(within: .seconds(10)))
        #expect(harness.states.value == [.disconnected, .connected, .disconnected, .connected])
        #expect(events.value == [.subscribed, .subscribed], "subscribed again before the client said connected")
        #expect(try await harness.reply("PUBLISH", "control", "after restart") == .integer(1))
        #expect(await events.wait(timeout: .seconds(5)) { $0.last == .message(Array("after restart".utf8)) })
        #expect(try await harness.reply("GET", "k") == .null)
        await harness.stop()
    }

    @Test("Redis frozen (SIGSTOP): a command times out on its deadline while the loop keeps working; the health check disconnects; SIGCONT reconnects")
    func frozen() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url, .init(
            commandTimeout: .milliseconds(500), connectTimeout: .milliseconds(500),
            reconnectDelay: .milliseconds(50) ... .milliseconds(200), healthCheckInterval: .milliseconds(200)))
        #expect(await harness.connected())
        _ = try await harness.reply("SET", "k", "v")
        let ticks = Observed(0)
        let ticker = try await harness.thread.run { loop in
            let timer = LoopTimer(loop: loop) { ticks.update { $0 += 1 } }
            timer.scheduleRepeating(every: .milliseconds(10))
            return LoopBound(timer, loop: loop)
        }

        redis.pause()
        let ticksBefore = ticks.value
        let (outcome, waited) = try await harness.timedOutcome(RedisCommand("GET", "k", timeout: .milliseconds(200)))
        #expect(outcome.failureKind == .timeout)
        // Measured on the loop's thread, from sending to the completion: when this task runs
        // again afterwards is the test's business, not the client's. libevent counts timeouts
        // from the loop's cached clock, so a deadline may end a millisecond or two early; the
        // upper bound tells "ended by its deadline, not by SIGCONT".
        #expect(waited >= .milliseconds(180) && waited < .seconds(3), "\(waited)")
        // 20 ticks on an idle machine; a loop blocked on Redis would manage none. A few
        // suffice as proof (the machine may be busy: 2 cores, AddressSanitizer).
        #expect(ticks.value - ticksBefore >= 3, "the loop's timer kept firing while the command waited")
        #expect(await harness.states.wait(timeout: .seconds(5)) { $0.last == .disconnected })
        #expect(await harness.failures.wait(timeout: .seconds(5)) { $0.first?.kind == .timeout })

        redis.resume()
        #expect(await harness.connected(within: .seconds(10)))
        #expect(try await harness.reply("GET", "k") == .string(Array("v".utf8)))
        try await harness.thread.run { _ in ticker.release() }
        await harness.stop()
    }

    @Test("Redis unreachable at start: attempts back off instead of spinning, commands fail fast, and the client joins once Redis is there")
    func unreachableAtStart() async throws {
        let port = try LoopbackPort.free()
        let harness = try await RedisHarness("redis://127.0.0.1:\(port)", Self.quick)
        #expect(await harness.failures.wait(timeout: .seconds(5)) { !$0.isEmpty })
        // The window is the measurement: attempts counted over 1.5 s of the loop's clock.
        let counted = Observed<Int?>(nil)
        let client = harness.client
        try await harness.thread.run { loop in
            let before = client.value.connectAttempts
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(1500))) {
                let attempts = client.value.connectAttempts - before
                counted.update { $0 = attempts }
            }
        }
        #expect(await counted.wait(timeout: .seconds(10)) { $0 != nil })
        let attempts = counted.value ?? 0
        // Each of the two connections waits 50, 100, 200, 400, 400 ms…: about 5 attempts each.
        #expect((4...16).contains(attempts), "\(attempts) attempts in 1.5 s")
        #expect(harness.states.value == [.disconnected])
        #expect(harness.failures.value.allSatisfy { $0.kind == .connectFailed })
        #expect(try await harness.outcome(RedisCommand("PING")).failureKind == .unavailable)

        let redis = try await RedisServerProcess.start(port: port)
        #expect(await harness.connected(within: .seconds(5)))
        #expect(try await harness.reply("PING") == .status("PONG"))
        await harness.stop()
        redis.stop()
    }

    @Test("dropping the client with commands in flight frees it at once; their completion handlers never run")
    func dropWithCommandsInFlight() async throws {
        let redis = try await RedisServerProcess.start()
        // No health check and long deadlines: on a machine busy with other tests, a late PING
        // answer must not disconnect the client before it is dropped.
        let patient = RedisClient.Configuration(commandTimeout: .seconds(30), healthCheckInterval: nil)
        let harness = try await RedisHarness(redis.url, patient)
        let observer = try await RedisHarness(redis.url, patient)
        #expect(await harness.connected())
        #expect(await observer.connected())
        // BLPOP blocks until the list gets an element: the ECHOs behind it wait with it.
        try await harness.start(0, RedisCommand("BLPOP", "nothing", "0"))
        for id in 1...20 { try await harness.start(id, RedisCommand("ECHO", "\(id)")) }
        #expect(try await blockedClients(become: 1, observer), "BLPOP is waiting at the server, the ECHOs behind it")

        try await harness.thread.run { _ in harness.client.release() }
        #expect(try await blockedClients(become: 0, observer), "the server saw the connection close")
        // A live client's BLPOP would take this element, and every handler would run.
        #expect(try await observer.reply("LPUSH", "nothing", "element") == .integer(1))
        #expect(try await observer.reply("LLEN", "nothing") == .integer(1), "nobody took it")
        #expect(harness.outcomes.value.isEmpty)
        await harness.stop()
        await observer.stop()
    }

    @Test("dropping the client inside its own reply callback or state notification is safe")
    func dropFromInsideCallbacks() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let client = harness.client
        let outcomes = harness.outcomes
        try await harness.thread.run { _ in
            client.value.send(RedisCommand("PING")) { outcome in
                outcomes.update { $0[0] = outcome }
                client.release()
            }
            for id in 1...20 {
                client.value.send(RedisCommand("ECHO", "\(id)")) { outcome in outcomes.update { $0[id] = outcome } }
            }
        }
        #expect(await outcomes.wait(timeout: .seconds(5)) { $0[0] != nil })
        #expect(await !outcomes.wait(timeout: .milliseconds(300)) { $0.count > 1 }, "nothing runs after the drop")
        await harness.stop()

        // Now from the notification of a lost connection, with a command waiting on it.
        let second = try await RedisHarness(redis.url, Self.quick)
        let observer = try await RedisHarness(redis.url)
        #expect(await second.connected())
        #expect(await observer.connected())
        let secondClient = second.client
        let dropped = Observed(false)
        try await second.keep { client in
            client.states.sink { state in
                guard state == .disconnected else { return }
                secondClient.release()
                dropped.update { $0 = true }
            }
        }
        try await second.start(1, RedisCommand("BLPOP", "nothing", "5"))
        #expect(try await blockedClients(become: 1, observer))
        redis.kill()
        #expect(await dropped.wait(timeout: .seconds(5)) { $0 })
        // Whichever connection hiredis saw close first: the command connection (the BLPOP
        // fails, then the state changes) or the pub/sub one (the client is dropped, and the
        // BLPOP's handler never runs).
        let blpop = second.outcomes.value[1]
        #expect(blpop == nil || blpop?.failureKind == .connectionLost, "\(String(describing: blpop))")
        await second.stop()
        await observer.stop()
    }

    /// Whether Redis' count of clients blocked in BLPOP reaches `expected` within 5 s. The
    /// BLPOP and the question travel on different connections, so the question is asked
    /// again (one round trip each) until the answer is in.
    private func blockedClients(become expected: Int, _ harness: RedisHarness) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            let info = try await harness.reply("INFO", "clients").text ?? ""
            let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("blocked_clients:") }
            if line.flatMap({ Int($0.dropFirst("blocked_clients:".count)) }) == expected { return true }
        }
        return false
    }
}
