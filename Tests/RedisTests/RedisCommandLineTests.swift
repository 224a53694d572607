import EventLoop
@testable import Redis
import Testing
import TributaryTesting

/// The command connection answers calls in the order they were sent, from a line of the calls
/// still waiting for their replies. A fleet's replica keeps commands outstanding all the time
/// (lease renewals, publishes, control replies): the line must stay as small as what waits in
/// it, though it never empties.
@Suite("Redis: the line of calls waiting for replies")
struct RedisCommandLineTests {
    /// Counts on the client's loop.
    private final class Chain {
        var sent = 0
        var answered = 0
        var largestLine = 0
    }

    @Test("20,000 commands, two always outstanding so the line never empties: it stays within a few dozen slots, every reply in order")
    func lineCompactsWhileOutstanding() async throws {
        let redis = try await RedisServerProcess.start()
        let harness = try await RedisHarness(redis.url)
        #expect(await harness.connected())
        let total = 20_000
        let done = Observed<(answered: Int, inOrder: Bool, largestLine: Int)?>(nil)
        try await harness.run { client in
            let chain = Chain()
            var inOrder = true
            func sendNext() {
                guard chain.sent < total else { return }
                chain.sent += 1
                client.send(RedisCommand("INCR", "outstanding")) { outcome in
                    chain.answered += 1
                    if (try? outcome.get()) != .integer(Int64(chain.answered)) { inOrder = false }
                    chain.largestLine = max(chain.largestLine, client.commandLineSlots)
                    sendNext()
                    if chain.answered == total { done.update { $0 = (chain.answered, inOrder, chain.largestLine) } }
                }
            }
            sendNext()
            sendNext()
        }
        #expect(await done.wait(timeout: .seconds(60)) { $0 != nil })
        #expect(done.value?.answered == total)
        #expect(done.value?.inOrder == true)
        #expect((done.value?.largestLine ?? .max) <= 40, "largest line: \(String(describing: done.value?.largestLine)) slots")
        await harness.stop()
    }
}
