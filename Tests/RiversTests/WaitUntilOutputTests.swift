import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("wait(untilOutputFrom:)")
struct WaitUntilOutputTests {
    @Test("subscribes to the upstream only when the signal first emits")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let signal: TestPublisher<String, Never> = scheduler.hotPublisher("-----x---x--")
        let upstream: TestPublisher<String, TestError> = scheduler.coldPublisher("-1-2-|")
        let recorder = upstream.wait(untilOutputFrom: signal).record(on: scheduler)
        scheduler.advance(toFrame: 4)
        #expect(upstream.subscriptions.isEmpty)
        scheduler.run()
        #expect(recorder.timeline == Timeline("------1-2-|"))
        #expect(upstream.subscriptions.count == 1)
        #expect(upstream.subscriptions[0].subscribedAtFrame == 5)
        #expect(signal.subscriptions[0].cancelCount == 1)
        #expect(signal.subscriptions[0].requestedDemands == [.max(1)])
    }

    @Test("demand requested before the signal is requested from the upstream when it is subscribed")
    func pendingDemand() {
        let signal = PassthroughSubject<Void, Never>()
        let upstream = TestPublisher<Int, Never>()
        let recorder = upstream.wait(untilOutputFrom: signal).record(initialDemand: .max(1))
        recorder.request(.max(2))
        signal.send(())
        #expect(upstream.subscriptions[0].requestedDemands == [.max(3)])
        for value in 0..<5 {
            upstream.send(value)
        }
        #expect(recorder.values == [0, 1, 2])
        #expect(recorder.violations.isEmpty)
    }

    @Test("cancelling before the signal cancels the signal only, once")
    func cancelWhileWaiting() {
        let signal = TestPublisher<Void, Never>()
        let upstream = TestPublisher<Int, Never>()
        let recorder = upstream.wait(untilOutputFrom: signal).record()
        recorder.cancel()
        signal.send(())
        #expect(signal.cancelCount == 1)
        #expect(upstream.subscriptions.isEmpty)
    }

    @Test("cancelling after the signal cancels the upstream only, once")
    func cancelWhileRunning() {
        let signal = TestPublisher<Void, Never>()
        let upstream = TestPublisher<Int, Never>()
        let recorder = upstream.wait(untilOutputFrom: signal).record()
        signal.send(())
        recorder.cancel()
        recorder.cancel()
        #expect(signal.cancelCount == 1)
        #expect(upstream.cancelCount == 1)
    }

    @Test("a signal that finishes without output never starts the upstream")
    func signalFinishesEmpty() {
        let upstream = TestPublisher<Int, Never>()
        let recorder = upstream.wait(untilOutputFrom: Empty<Void, Never>()).record()
        #expect(upstream.subscriptions.isEmpty)
        #expect(recorder.events.isEmpty)
    }

    @Test("the upstream's failure passes through")
    func failure() {
        let recorder = Fail<Int, TestError>(error: .boom).wait(untilOutputFrom: Just(())).record()
        #expect(recorder.failure == .boom)
    }
}
