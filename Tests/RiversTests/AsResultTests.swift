import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("asResult()")
struct AsResultTests {
    private func describe(_ result: Result<String, TestError>) -> String {
        switch result {
        case let .success(value): value
        case .failure: "F"
        }
    }

    @Test("outputs become successes; a failure becomes a .failure value, then completion")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let upstream: TestPublisher<String, TestError> = scheduler.hotPublisher("-1--2--#", error: .boom)
        let recorder = upstream.asResult().record(on: scheduler)
        scheduler.run()
        #expect(recorder.values.map(describe) == ["1", "2", "F"])
        #expect(recorder.timeline.events.map(\.frame) == [1, 4, 7, 7])
        #expect(recorder.isFinished)
        if case let .failure(error)? = recorder.values.last {
            #expect(error == .boom)
        } else {
            Issue.record("expected a failure value")
        }
    }

    @Test("a normal completion passes through")
    func finished() {
        let recorder = Just(1).setFailureType(to: TestError.self).asResult().record()
        #expect(recorder.values.count == 1)
        #expect(recorder.isFinished)
    }

    @Test("the failure value waits for demand")
    func demand() {
        let upstream = TestPublisher<Int, TestError>()
        let recorder = upstream.asResult().record(initialDemand: .max(1))
        upstream.send(1)
        upstream.send(completion: .failure(.boom))
        #expect(recorder.values.count == 1)
        #expect(recorder.completion == nil)
        recorder.request(.max(1))
        #expect(recorder.values.count == 2)
        #expect(recorder.isFinished)
        #expect(upstream.subscriptions[0].requestedDemands == [.max(1)])
        #expect(recorder.violations.isEmpty)
    }

    @Test("cancelling cancels the upstream exactly once")
    func cancellation() {
        let upstream = TestPublisher<Int, TestError>()
        let recorder = upstream.asResult().record()
        recorder.cancel()
        upstream.send(1)
        #expect(upstream.cancelCount == 1)
        #expect(recorder.events.isEmpty)
    }
}
