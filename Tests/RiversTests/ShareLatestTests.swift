import OpenCombine
import PropertyBased
import Rivers
import RiversTesting
import Testing

@Suite("ShareLatest")
struct ShareLatestTests {
    @Test("one upstream subscription serves every subscriber; a newcomer gets the latest value at once")
    func sharesAndReplays() {
        let upstream = TestPublisher<String, Never>()
        let shared = upstream.shareLatest()
        let first = shared.record()
        upstream.send("a")
        let second = shared.record()
        upstream.send("b")
        #expect(first.values == ["a", "b"])
        #expect(second.values == ["a", "b"])
        #expect(upstream.subscriptions.count == 1)
        #expect(upstream.subscriptions[0].requestedDemands == [.unlimited])
    }

    @Test("a subscriber without demand keeps only the latest value it has not taken")
    func conflatesPerSubscriber() {
        let upstream = TestPublisher<Int, Never>()
        let shared = upstream.shareLatest()
        let fast = shared.record()
        let slow = shared.record(initialDemand: .max(1))
        upstream.send(1)
        upstream.send(2)
        upstream.send(3)
        #expect(fast.values == [1, 2, 3])
        #expect(slow.values == [1])
        slow.request(.max(1))
        #expect(slow.values == [1, 3])
        slow.request(.max(1))
        #expect(slow.values == [1, 3], "nothing new: the demand waits for the next value")
        upstream.send(4)
        #expect(slow.values == [1, 3, 4])
        #expect(slow.violations.isEmpty)
    }

    @Test("the last subscriber leaving cancels the upstream once and forgets the latest value")
    func referenceCounted() {
        let upstream = TestPublisher<Int, Never>()
        let shared = upstream.shareLatest()
        let first = shared.record()
        let second = shared.record()
        upstream.send(1)
        first.cancel()
        #expect(upstream.cancelCount == 0)
        second.cancel()
        #expect(upstream.cancelCount == 1)
        #expect(shared.subscriberCount == 0)

        let later = shared.record()
        #expect(later.values.isEmpty, "a new run does not replay a stale value")
        #expect(upstream.subscriptions.count == 2)
        upstream.send(2)
        #expect(later.values == [2])
    }

    @Test("completion reaches every subscriber, and a later subscriber starts anew")
    func completion() {
        let upstream = TestPublisher<Int, TestError>()
        let shared = upstream.shareLatest()
        let first = shared.record()
        let second = shared.record()
        upstream.send(1)
        upstream.send(completion: .failure(.boom))
        #expect(first.failure == .boom)
        #expect(second.failure == .boom)
        let later = shared.record()
        #expect(upstream.subscriptions.count == 2)
        #expect(later.completion == nil)
    }

    @Test("a subscriber that cancels from inside receive stops receiving, and the others go on")
    func cancelInsideReceive() {
        let upstream = TestPublisher<Int, Never>()
        let shared = upstream.shareLatest()
        var quitter: RecordingSubscriber<Int, Never>!
        quitter = shared.record()
        quitter.onValue = { value in
            if value == 2 { quitter.cancel() }
            return .none
        }
        let stayer = shared.record()
        for value in 1...3 { upstream.send(value) }
        #expect(quitter.values == [1, 2])
        #expect(stayer.values == [1, 2, 3])
        #expect(upstream.cancelCount == 0)
    }

    @Test(
        "a completion from one thread never overlaps or overtakes a value another thread's request is delivering",
        .shrinking(false)
    )
    func completionWaitsForValueInFlight() async {
        await propertyCheck(
            count: 3_000,
            input: Gen.int(in: 0...150),
            Gen.int(in: 0...150),
            Gen.int(in: 0...100)
        ) { requestSpin, completionSpin, holdRounds in
            let upstream = PassthroughSubject<Int, TestError>()
            let shared = upstream.shareLatest()
            let probe = ContractProbe<Int, TestError>(holdRounds: holdRounds)
            shared.subscribe(probe)
            upstream.send(1)
            await race(
                spinning: requestSpin, { probe.request(.max(1)) },
                spinning: completionSpin, { upstream.send(completion: .finished) }
            )
            #expect(probe.violations.isEmpty)
            #expect(probe.completionCount == 1)
        }
    }

    @Test("subscribers joining while the upstream completes on another thread get their subscription first", .shrinking(false))
    @available(macOS 15.0, *)
    func subscriptionBeforeCompletion() async {
        await propertyCheck(count: 3_000, input: Gen.int(in: 0...300), Gen.int(in: 0...30)) { completionSpin, holdRounds in
            let upstream = PassthroughSubject<Int, TestError>()
            let shared = upstream.shareLatest()
            let first = ContractProbe<Int, TestError>(initialDemand: .unlimited)
            shared.subscribe(first)
            nonisolated(unsafe) var joiners: [ContractProbe<Int, TestError>] = []
            await race(
                spinning: 0, {
                    // Joins until the completion reached the first subscriber, so that it lands
                    // while some joiner is being subscribed.
                    while first.completionCount == 0 && joiners.count < 10_000 {
                        let joiner = ContractProbe<Int, TestError>(initialDemand: .unlimited, holdRounds: holdRounds)
                        joiners.append(joiner)
                        shared.subscribe(joiner)
                    }
                },
                spinning: completionSpin, { upstream.send(completion: .finished) }
            )
            let violations = joiners.flatMap(\.violations)
            #expect(violations.isEmpty, "\(violations)")
            #expect(joiners.allSatisfy { $0.completionCount == 1 })
        }
    }
}
