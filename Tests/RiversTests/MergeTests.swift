import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("Merge")
struct MergeTests {
    @Test("interleaves values in arrival order and finishes when both finished")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-1----2-----|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("---a-----b-----|")
        let recorder = a.merge(with: b).record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-1-a--2--b-----|"))
        #expect(recorder.violations.isEmpty)
    }

    @Test("synchronous inputs keep their subscription order")
    func synchronousOrder() {
        let recorder = Publishers.Merge(Just(1), Just(2)).record()
        #expect(recorder.values == [1, 2])
        #expect(recorder.isFinished)
    }

    @Test("fails with the first failure and cancels the other input once")
    func failure() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, TestError> = scheduler.hotPublisher("-1----2--|")
        let b: TestPublisher<String, TestError> = scheduler.hotPublisher("---#", error: .boom)
        let recorder = a.merge(with: b).record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-1-#", error: .boom))
        #expect(a.cancelCount == 1)
        #expect(b.cancelCount == 0)
    }

    @Test("cancelling cancels both inputs exactly once")
    func cancellation() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.merge(with: b).record()
        a.send(1)
        recorder.cancel()
        b.send(2)
        #expect(recorder.values == [1])
        #expect(a.cancelCount == 1)
        #expect(b.cancelCount == 1)
        #expect(recorder.violations.isEmpty)
    }

    @Test("with bounded demand asks each input for one value at a time and never sends more than requested")
    func boundedDemand() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.merge(with: b).record(initialDemand: .max(2))
        a.send(1)
        a.send(2)
        a.send(3)
        b.send(10)
        #expect(recorder.values == [1, 2])
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2, 10])
        recorder.request(.max(2))
        #expect(recorder.values == [1, 2, 10, 3])
        #expect(a.subscriptions[0].requestedDemands.allSatisfy { $0 == .max(1) })
        #expect(b.subscriptions[0].requestedDemands.allSatisfy { $0 == .max(1) })
        #expect(recorder.violations.isEmpty)
    }

    @Test("buffered values are delivered before the completion")
    func completionAfterBuffer() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.merge(with: b).record(initialDemand: .max(1))
        a.send(1)
        b.send(2)
        a.send(completion: .finished)
        b.send(completion: .finished)
        #expect(recorder.values == [1])
        #expect(recorder.completion == nil)
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2])
        #expect(recorder.isFinished)
    }

    @Test("unlimited demand is passed on to every input")
    func unlimitedDemand() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.merge(with: b).record(initialDemand: .max(1))
        recorder.request(.unlimited)
        a.send(1)
        b.send(2)
        #expect(recorder.values == [1, 2])
        #expect(a.subscriptions[0].requestedDemands == [.max(1), .unlimited])
    }
}

@Suite("MergeMany")
struct MergeManyTests {
    @Test("interleaves any number of inputs")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let inputs: [TestPublisher<String, Never>] = [
            scheduler.hotPublisher("-1-----2---|"),
            scheduler.hotPublisher("---a-------|"),
            scheduler.hotPublisher("-----x--------|"),
        ]
        let recorder = inputs.merged().record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-1-a-x-2------|"))
    }

    @Test("with no inputs finishes at once, even without demand")
    func empty() {
        let recorder = Publishers.MergeMany([Just<Int>]()).record(initialDemand: .none)
        #expect(recorder.timeline == Timeline(events: [TimedEvent(frame: 0, event: .finished)]))
    }

    @Test("merge(with:) adds an input")
    func mergeWith() {
        let recorder = Publishers.MergeMany(Just(1), Just(2)).merge(with: Just(3)).record()
        #expect(recorder.values == [1, 2, 3])
        #expect(recorder.isFinished)
    }

    @Test("cancelling cancels every input exactly once")
    func cancellation() {
        let inputs = (0..<100).map { _ in TestPublisher<Int, Never>() }
        let recorder = Publishers.MergeMany(inputs).record()
        inputs[7].send(7)
        recorder.cancel()
        #expect(recorder.values == [7])
        #expect(inputs.allSatisfy { $0.cancelCount == 1 })
    }

    @Test("steps through demand one value at a time across inputs")
    func demandSteps() {
        let inputs = (0..<3).map { _ in TestPublisher<Int, Never>() }
        let recorder = Publishers.MergeMany(inputs).record(initialDemand: .none)
        for (index, input) in inputs.enumerated() {
            input.send(index)
            input.send(index + 10)
        }
        #expect(recorder.values.isEmpty)
        for _ in 0..<6 {
            recorder.request(.max(1))
        }
        #expect(recorder.values.sorted() == [0, 1, 2, 10, 11, 12])
        #expect(recorder.values.firstIndex(of: 0)! < recorder.values.firstIndex(of: 10)!)
        #expect(recorder.violations.isEmpty)
        #expect(inputs.allSatisfy { $0.subscriptions[0].bufferedCount == 0 })
    }
}
