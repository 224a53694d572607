import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("AccumulateLatestMany")
struct AccumulateLatestManyTests {
    @Test("emits nothing until every input emitted, then the array in input order on every update")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let p0: TestPublisher<String, Never> = scheduler.hotPublisher("-a-----b------|")
        let p1: TestPublisher<String, Never> = scheduler.hotPublisher("---x-------y---|")
        let p2: TestPublisher<String, Never> = scheduler.hotPublisher("-----k----------|")
        let recorder = Publishers.AccumulateLatestMany([p0, p1, p2])
            .map { $0.joined() }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-----A-B---C----|", values: ["A": "axk", "B": "bxk", "C": "byk"]))
        #expect(recorder.violations.isEmpty)
    }

    @Test("with no inputs emits an empty array when asked, then finishes")
    func empty() {
        let recorder = Publishers.AccumulateLatestMany([Just<Int>]()).record(initialDemand: .none)
        #expect(recorder.events.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [[]])
        #expect(recorder.isFinished)
    }

    @Test("accumulateLatest() combines a sequence of publishers")
    func sequenceOperator() {
        let recorder = [Just(1), Just(2), Just(3)].accumulateLatest().record()
        #expect(recorder.values == [[1, 2, 3]])
        #expect(recorder.isFinished)
    }

    @Test("keeps input order with 1,000 inputs and emits one array per update")
    func thousandInputs() {
        let subjects = (0..<1_000).map { _ in PassthroughSubject<Int, Never>() }
        let recorder = subjects.accumulateLatest().record()
        for (index, subject) in subjects.enumerated().reversed() {
            subject.send(index)
        }
        #expect(recorder.values.count == 1)
        #expect(recorder.values.last == Array(0..<1_000))
        subjects[500].send(-1)
        #expect(recorder.values.count == 2)
        #expect(recorder.values.last?[500] == -1)
        #expect(recorder.values.last?[499] == 499)
    }

    @Test("fails with the first failure and cancels every other input exactly once")
    func failure() {
        let inputs = (0..<5).map { _ in TestPublisher<Int, TestError>() }
        let recorder = inputs.accumulateLatest().record()
        inputs[0].send(0)
        inputs[3].send(completion: .failure(.boom))
        inputs[1].send(completion: .failure(.other))
        #expect(recorder.failure == .boom)
        #expect(recorder.values.isEmpty)
        #expect(inputs.map(\.cancelCount) == [1, 1, 1, 0, 1])
        #expect(recorder.violations.isEmpty)
    }

    @Test("finishes after every input finished, or at once when one finishes without a value")
    func completion() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a-|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("--b---|")
        let all = Publishers.AccumulateLatestMany(a, b).map { $0.joined() }.record(on: scheduler)
        let c: TestPublisher<String, Never> = scheduler.hotPublisher("-a-----|")
        let d: TestPublisher<String, Never> = scheduler.hotPublisher("---|")
        let early = Publishers.AccumulateLatestMany(c, d).map { $0.joined() }.record(on: scheduler)
        scheduler.run()
        #expect(all.timeline == Timeline("--A---|", values: ["A": "ab"]))
        #expect(early.timeline == Timeline("---|"))
        #expect(c.cancelCount == 1)
    }

    @Test("cancelling cancels all 1,000 inputs exactly once")
    func cancellation() {
        let inputs = (0..<1_000).map { _ in TestPublisher<Int, Never>() }
        let recorder = inputs.accumulateLatest().record()
        recorder.cancel()
        inputs[0].send(1)
        #expect(inputs.allSatisfy { $0.cancelCount == 1 })
        #expect(recorder.events.isEmpty)
        #expect(recorder.violations.isEmpty)
    }

    @Test("never sends more than requested: updates without demand are coalesced into the latest array")
    func demand() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = [a, b].accumulateLatest().record(initialDemand: .none)
        a.send(1)
        b.send(2)
        a.send(3)
        #expect(recorder.events.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [[3, 2]])
        b.send(4)
        b.send(5)
        recorder.request(.max(1))
        #expect(recorder.values == [[3, 2], [3, 5]])
        #expect(a.subscriptions[0].requestedDemands == [.unlimited])
        #expect(recorder.violations.isEmpty)
    }
}
