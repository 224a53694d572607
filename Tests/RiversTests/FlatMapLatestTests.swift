import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("FlatMapLatest")
struct FlatMapLatestTests {
    @Test("republishes the latest inner publisher only, cancelling the one it replaces")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-a-----b----|")
        let inner: [String: TestPublisher<String, TestError>] = [
            "a": scheduler.coldPublisher("-1-2---3"),
            "b": scheduler.coldPublisher("-4---5|"),
        ]
        let recorder = elements.flatMapLatest { inner[$0]! }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("--1-2---4---5|"))
        #expect(inner["a"]!.cancelCount == 1)
        #expect(inner["b"]!.cancelCount == 0)
        #expect(recorder.violations.isEmpty)
    }

    @Test("finishes when the upstream finished and the current inner finished")
    func completion() {
        let upstream = TestPublisher<Int, Never>()
        let inner = TestPublisher<Int, Never>()
        let recorder = upstream.flatMapLatest { _ in inner }.record()
        upstream.send(1)
        upstream.send(completion: .finished)
        #expect(recorder.completion == nil)
        inner.send(completion: .finished)
        #expect(recorder.isFinished)

        let idle = Empty<Int, Never>().flatMapLatest { Just($0) }.record()
        #expect(idle.isFinished)
    }

    @Test("an inner failure fails the stream and cancels the upstream once")
    func innerFailure() {
        let upstream = TestPublisher<Int, TestError>()
        let recorder = upstream.flatMapLatest { _ in Fail<Int, TestError>(error: .boom) }.record()
        upstream.send(1)
        #expect(recorder.failure == .boom)
        #expect(upstream.cancelCount == 1)
    }

    @Test("an upstream failure fails the stream and cancels the current inner once")
    func upstreamFailure() {
        let upstream = TestPublisher<Int, TestError>()
        let inner = TestPublisher<Int, TestError>()
        let recorder = upstream.flatMapLatest { _ in inner }.record()
        upstream.send(1)
        upstream.send(completion: .failure(.other))
        #expect(recorder.failure == .other)
        #expect(inner.cancelCount == 1)
    }

    @Test("cancelling cancels the upstream and the current inner exactly once")
    func cancellation() {
        let upstream = TestPublisher<Int, Never>()
        let inner = TestPublisher<Int, Never>()
        let recorder = upstream.flatMapLatest { _ in inner }.record()
        upstream.send(1)
        recorder.cancel()
        inner.send(2)
        #expect(upstream.cancelCount == 1)
        #expect(inner.cancelCount == 1)
        #expect(recorder.events.isEmpty)
    }

    @Test("asks the current inner for exactly the downstream demand; a new inner inherits what is left")
    func demand() {
        let upstream = TestPublisher<Int, Never>()
        let first = TestPublisher<Int, Never>()
        let second = TestPublisher<Int, Never>()
        let inners = [first, second]
        let recorder = upstream.flatMapLatest { inners[$0] }.record(initialDemand: .max(2))
        #expect(upstream.subscriptions[0].requestedDemands == [.unlimited])
        upstream.send(0)
        first.send(10)
        upstream.send(1)
        second.send(20)
        second.send(21)
        #expect(recorder.values == [10, 20])
        #expect(first.subscriptions[0].requestedDemands == [.max(2)])
        #expect(second.subscriptions[0].requestedDemands == [.max(1)])
        recorder.request(.max(1))
        #expect(recorder.values == [10, 20, 21])
        #expect(recorder.violations.isEmpty)
    }

    @Test("works with an upstream that cannot fail")
    func neverFailingUpstream() {
        let signal = PassthroughSubject<Void, Never>()
        var calls = 0
        let recorder = signal
            .flatMapLatest { _ -> Fail<Int, TestError> in
                calls += 1
                return Fail(error: .boom)
            }
            .record()
        signal.send(())
        #expect(calls == 1)
        #expect(recorder.failure == .boom)
    }
}
