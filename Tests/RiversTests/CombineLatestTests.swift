import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("CombineLatest")
struct CombineLatestTests {
    @Test("emits the latest pair on every update once both inputs have a value")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a----b------c-|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("---x------y------|")
        let recorder = a.combineLatest(b) { $0 + $1 }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("---A--B---C--D---|", values: ["A": "ax", "B": "bx", "C": "by", "D": "cy"]))
        #expect(recorder.violations.isEmpty)
    }

    @Test("emits tuples in input order")
    func tuples() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<String, Never>()
        var received: [String] = []
        let cancellable = Publishers.CombineLatest(a, b).sink { received.append("\($0)\($1)") }
        a.send(1)
        b.send("x")
        a.send(2)
        #expect(received == ["1x", "2x"])
        cancellable.cancel()
    }

    @Test("CombineLatest3 and CombineLatest4 combine three and four inputs")
    func arities() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a--------b---|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("---c-----------|")
        let c: TestPublisher<String, Never> = scheduler.hotPublisher("-----d---------|")
        let d: TestPublisher<String, Never> = scheduler.hotPublisher("------e--------|")
        let three = a.combineLatest(b, c) { $0 + $1 + $2 }.record(on: scheduler)
        let four = a.combineLatest(b, c, d) { $0 + $1 + $2 + $3 }.record(on: scheduler)
        scheduler.run()
        #expect(three.timeline == Timeline("-----A----B----|", values: ["A": "acd", "B": "bcd"]))
        #expect(four.timeline == Timeline("------A---B----|", values: ["A": "acde", "B": "bcde"]))
    }

    @Test("finishes only when every input finished")
    func finishesWhenAllFinish() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a-|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("--b-----|")
        let recorder = a.combineLatest(b) { $0 + $1 }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("--A-----|", values: ["A": "ab"]))
    }

    @Test("finishes at once, cancelling the other input, when an input finishes without a value")
    func finishesEarlyWithoutValue() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a-----|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("--|")
        let recorder = a.combineLatest(b) { $0 + $1 }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("--|"))
        #expect(a.subscriptions[0].cancelCount == 1)
        #expect(b.subscriptions[0].cancelCount == 0)
    }

    @Test("fails with the first failure and cancels the other input once")
    func failure() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, TestError> = scheduler.hotPublisher("-a---b--|")
        let b: TestPublisher<String, TestError> = scheduler.hotPublisher("--x-#", error: .boom)
        let recorder = a.combineLatest(b) { $0 + $1 }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("--A-#", values: ["A": "ax"], error: .boom))
        #expect(a.subscriptions[0].cancelCount == 1)
        #expect(b.subscriptions[0].cancelCount == 0)
    }

    @Test("cancelling cancels every input exactly once and nothing is sent afterwards")
    func cancellation() {
        let scheduler = VirtualTimeScheduler()
        let a: TestPublisher<String, Never> = scheduler.hotPublisher("-a--b--|")
        let b: TestPublisher<String, Never> = scheduler.hotPublisher("-x--y--|")
        let recorder = a.combineLatest(b) { $0 + $1 }.record(on: scheduler)
        scheduler.advance(toFrame: 2)
        recorder.cancel()
        recorder.cancel()
        scheduler.run()
        #expect(recorder.timeline == Timeline("-A", values: ["A": "ax"]))
        #expect(a.cancelCount == 1)
        #expect(b.cancelCount == 1)
        #expect(recorder.violations.isEmpty)
    }

    @Test("asks each input for unlimited values and coalesces updates while downstream has no demand")
    func demandCoalescing() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.combineLatest(b) { $0 * 10 + $1 }.record(initialDemand: .max(1))
        a.send(1)
        b.send(1)
        a.send(2)
        b.send(3)
        a.send(4)
        #expect(recorder.values == [11])
        recorder.request(.max(1))
        #expect(recorder.values == [11, 43])
        recorder.request(.max(5))
        #expect(recorder.values == [11, 43])
        b.send(5)
        #expect(recorder.values == [11, 43, 45])
        #expect(a.subscriptions[0].requestedDemands == [.unlimited])
        #expect(b.subscriptions[0].requestedDemands == [.unlimited])
        #expect(recorder.violations.isEmpty)
    }

    @Test("delivers a pending combination before finishing")
    func pendingBeforeFinish() {
        let a = TestPublisher<Int, Never>()
        let b = TestPublisher<Int, Never>()
        let recorder = a.combineLatest(b) { $0 + $1 }.record(initialDemand: .none)
        a.send(1)
        b.send(2)
        a.send(completion: .finished)
        b.send(completion: .finished)
        #expect(recorder.events.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [3])
        #expect(recorder.isFinished)
    }

    @Test("allows downstream to request and cancel from inside receive")
    func reentrancy() {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        recorder.onValue = { value in
            if value == 3 {
                recorder.cancel()
                return .none
            }
            recorder.request(.max(1))
            return .none
        }
        a.combineLatest(b) { $0 + $1 }.subscribe(recorder)
        a.send(1)
        b.send(0)
        a.send(2)
        a.send(3)
        a.send(4)
        #expect(recorder.values == [1, 2, 3])
        #expect(recorder.violations.isEmpty)
    }
}
