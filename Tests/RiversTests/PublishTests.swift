import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("Publish")
struct PublishTests {
    @Test("makes and runs a new upstream on every signal, nothing before the first")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let signal: TestPublisher<String, Never> = scheduler.hotPublisher("----x---------x------")
        var made: [TestPublisher<String, Never>] = []
        let recorder = Publishers.Publish(onOutputFrom: signal) { () -> TestPublisher<String, Never> in
            let upstream: TestPublisher<String, Never> = scheduler.coldPublisher("-1--2|")
            made.append(upstream)
            return upstream
        }
        .record(on: scheduler)
        scheduler.advance(toFrame: 3)
        #expect(made.isEmpty)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-----1--2------1--2"))
        #expect(made.count == 2)
    }

    @Test("a new signal cancels the upstream still running, once")
    func switching() {
        let signal = PassthroughSubject<Void, Never>()
        var made: [TestPublisher<Int, Never>] = []
        let recorder = Publishers.Publish(onOutputFrom: signal) { () -> TestPublisher<Int, Never> in
            made.append(TestPublisher())
            return made[made.count - 1]
        }
        .record()
        signal.send(())
        made[0].send(1)
        signal.send(())
        made[0].send(2)
        made[1].send(3)
        #expect(recorder.values == [1, 3])
        #expect(made[0].cancelCount == 1)
    }

    @Test("cancelling cancels the signal and the running upstream exactly once")
    func cancellation() {
        let signal = TestPublisher<Void, Never>()
        let upstream = TestPublisher<Int, TestError>()
        let recorder = Publishers.Publish(onOutputFrom: signal) { upstream }.record()
        signal.send(())
        recorder.cancel()
        #expect(signal.cancelCount == 1)
        #expect(upstream.cancelCount == 1)
    }

    @Test("passes downstream demand to the running upstream")
    func demand() {
        let signal = TestPublisher<Void, Never>()
        let upstream = TestPublisher<Int, Never>()
        let recorder = Publishers.Publish(onOutputFrom: signal) { upstream }.record(initialDemand: .max(1))
        signal.send(())
        upstream.send(1)
        upstream.send(2)
        #expect(recorder.values == [1])
        #expect(upstream.subscriptions[0].requestedDemands == [.max(1)])
        #expect(signal.subscriptions[0].requestedDemands == [.unlimited])
        #expect(recorder.violations.isEmpty)
    }

    @Test("an upstream failure fails the publisher")
    func failure() {
        let signal = TestPublisher<Void, Never>()
        let recorder = Publishers.Publish(onOutputFrom: signal) { Fail<Int, TestError>(error: .boom) }.record()
        signal.send(())
        #expect(recorder.failure == .boom)
        #expect(signal.cancelCount == 1)
    }
}

@Suite("PublishAndRepeat")
struct PublishAndRepeatTests {
    @Test("runs the upstream at once, then anew on every signal")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let signal: TestPublisher<String, Never> = scheduler.hotPublisher("---------x----")
        let recorder = Publishers.PublishAndRepeat(onOutputFrom: signal) { () -> TestPublisher<String, Never> in
            scheduler.coldPublisher("-1--2|")
        }
        .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-1--2-----1--2"))
    }

    @Test("reloading with a Trigger replaces the running upstream")
    func withTrigger() {
        let trigger = Trigger()
        var generation = 0
        let recorder = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) {
            () -> Just<Int> in
            generation += 1
            return Just(generation)
        }
        .record()
        trigger.activate(for: "other")
        trigger.activate(for: "reload")
        trigger.activate(for: "reload")
        #expect(recorder.values == [1, 2, 3])
        #expect(recorder.completion == nil)
    }

    @Test("cancelling cancels the signal and the running upstream exactly once")
    func cancellation() {
        let signal = TestPublisher<Void, Never>()
        let upstream = TestPublisher<Int, Never>()
        let recorder = Publishers.PublishAndRepeat(onOutputFrom: signal) { upstream }.record()
        recorder.cancel()
        #expect(signal.cancelCount == 1)
        #expect(upstream.cancelCount == 1)
    }

    @Test("passes downstream demand to the running upstream")
    func demand() {
        let upstream = TestPublisher<Int, Never>()
        let recorder = Publishers.PublishAndRepeat(onOutputFrom: Empty<Void, Never>(completeImmediately: false)) {
            upstream
        }
        .record(initialDemand: .none)
        upstream.send(1)
        #expect(recorder.values.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [1])
        #expect(upstream.subscriptions[0].requestedDemands == [.max(1)])
    }
}
