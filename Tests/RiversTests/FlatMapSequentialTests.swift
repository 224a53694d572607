import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("FlatMapSequential")
struct FlatMapSequentialTests {
    /// Inner publishers keyed by element, each playing its marble line from its subscription.
    private func inners(
        _ scheduler: VirtualTimeScheduler,
        _ lines: [String: String]
    ) -> [String: TestPublisher<String, TestError>] {
        lines.mapValues { scheduler.coldPublisher($0, error: TestError.boom) }
    }

    @Test("publishes inner outputs in element order however the inners complete")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-1-2-3---------|")
        let inner = inners(scheduler, ["1": "--------a|", "2": "--b|", "3": "----c|"])
        let recorder = elements
            .flatMapSequential(maxPublishers: .max(2)) { inner[$0]! }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("---------a(bc)----|"))
        // The third inner starts only when the second finished and freed a slot.
        #expect(inner["3"]!.subscriptions[0].subscribedAtFrame == 6)
        #expect(recorder.violations.isEmpty)
    }

    @Test("keeps every output of a multi-value inner together and in order")
    func multiValueInners() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("(12)-----|")
        let inner = inners(scheduler, ["1": "-a---b|", "2": "c-d|"])
        let recorder = elements.flatMapSequential { inner[$0]! }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-a---b(cd|)"))
    }

    @Test("runs at most maxPublishers inners at once")
    func concurrencyLimit() {
        let scheduler = VirtualTimeScheduler()
        let probe = ConcurrencyProbe()
        let recorder = Publishers.Sequence<[Int], Never>(sequence: Array(0..<10))
            .flatMapSequential(maxPublishers: .max(3)) { value in
                probe.track(scheduler.coldPublisher(value.isMultiple(of: 2) ? "---a|" : "-a|", error: TestError.boom))
            }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.values.count == 10)
        #expect(probe.maxRunning == 3)
        #expect(probe.running == 0)
        #expect(recorder.isFinished)
    }

    @Test(".fail: an inner failure fails the stream at once and cancels the upstream and the running inners")
    func failPolicy() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-123----|")
        let inner = inners(scheduler, ["1": "-----a|", "2": "--#", "3": "-----c|"])
        let recorder = elements
            .flatMapSequential(maxPublishers: .max(3), onFailure: .fail) { inner[$0]! }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline<String, TestError>("----#", error: .boom))
        #expect(elements.cancelCount == 1)
        #expect(inner["1"]!.cancelCount == 1)
        #expect(inner["2"]!.cancelCount == 0)
        #expect(inner["3"]!.cancelCount == 1)
    }

    @Test(".replace: a failing inner contributes its outputs, then the fallback, in its place")
    func replacePolicy() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-123----|")
        let inner = inners(scheduler, ["1": "-----a|", "2": "-b#", "3": "--c|"])
        let recorder = elements
            .flatMapSequential(onFailure: .replace { element, error in "\(element)\(error)" }) { inner[$0]! }
            .map { $0 == "2boom" ? "R" : $0 }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("------a(bRc)|"))
    }

    @Test(".skip: a failing inner contributes only what it emitted before failing")
    func skipPolicy() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-123----|")
        let inner = inners(scheduler, ["1": "-----a|", "2": "-b#", "3": "--c|"])
        let recorder = elements
            .flatMapSequential(onFailure: .skip) { inner[$0]! }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("------a(bc)|"))
        #expect(recorder.violations.isEmpty)
    }

    @Test("an upstream failure fails the stream at once and cancels the running inners")
    func upstreamFailure() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-12-#", error: .other)
        let inner = inners(scheduler, ["1": "-a|", "2": "-----b|"])
        let recorder = elements.flatMapSequential { inner[$0]! }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("--a-#", error: .other))
        #expect(inner["2"]!.cancelCount == 1)
    }

    @Test("cancelling cancels the upstream and every running inner exactly once")
    func cancellation() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-123-----|")
        let inner = inners(scheduler, ["1": "----a|", "2": "-b|", "3": "------c|"])
        let recorder = elements.flatMapSequential(maxPublishers: .max(2)) { inner[$0]! }.record(on: scheduler)
        scheduler.advance(toFrame: 4)
        recorder.cancel()
        scheduler.run()
        #expect(recorder.events.isEmpty)
        #expect(elements.cancelCount == 1)
        #expect(inner["1"]!.cancelCount == 1)
        #expect(inner["2"]!.cancelCount == 0)
        #expect(inner["3"]!.cancelCount == 1)
        #expect(recorder.violations.isEmpty)
    }

    @Test("finishes after the upstream and every inner finished")
    func completion() {
        let empty = Empty<Int, Never>().flatMapSequential { Just($0) }.record()
        #expect(empty.isFinished)
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("-1|")
        let inner = inners(scheduler, ["1": "---a|"])
        let recorder = elements.flatMapSequential { inner[$0]! }.record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("----a|"))
    }

    @Test("never sends more than requested, buffering later inners' outputs")
    func demand() {
        let scheduler = VirtualTimeScheduler()
        let elements: TestPublisher<String, TestError> = scheduler.hotPublisher("(123)|")
        let inner = inners(scheduler, ["1": "-(ab)|", "2": "c|", "3": "(de)|"])
        let recorder = elements
            .flatMapSequential { inner[$0]! }
            .record(on: scheduler, initialDemand: .max(1))
        scheduler.run()
        #expect(recorder.values == ["a"])
        recorder.request(.max(2))
        #expect(recorder.values == ["a", "b", "c"])
        recorder.request(.max(1))
        #expect(recorder.values == ["a", "b", "c", "d"])
        #expect(recorder.completion == nil)
        recorder.request(.max(1))
        #expect(recorder.values == ["a", "b", "c", "d", "e"])
        #expect(recorder.isFinished)
        #expect(recorder.violations.isEmpty)
    }

    @Test("the oldest inner is asked for exactly the downstream demand; with maxPublishers 1 this is concatMap")
    func exactHeadDemand() {
        let first = TestPublisher<Int, Never>()
        let second = TestPublisher<Int, Never>()
        let inners = [first, second]
        let recorder = Publishers.Sequence<[Int], Never>(sequence: [0, 1])
            .flatMapSequential(maxPublishers: .max(1)) { inners[$0] }
            .record(initialDemand: .max(1))
        #expect(first.subscriptions[0].requestedDemands == [.max(1)])
        first.send(1)
        first.send(2)
        #expect(recorder.values == [1])
        recorder.request(.max(2))
        #expect(recorder.values == [1, 2])
        #expect(first.subscriptions[0].requestedDemands == [.max(1), .max(2)])
        #expect(second.subscriptions.isEmpty)
        first.send(completion: .finished)
        #expect(second.subscriptions.count == 1)
        #expect(recorder.violations.isEmpty)
    }

    @Test("after a .replace fallback waits for demand, the next inner is still asked only for what downstream asks")
    func backPressureAfterFallback() {
        let inners = [TestPublisher<Int, TestError>(), TestPublisher<Int, TestError>()]
        let recorder = Publishers.Sequence<[Int], TestError>(sequence: [0, 1])
            .flatMapSequential(maxPublishers: .max(1), onFailure: .replace(with: -1)) { inners[$0] }
            .record(initialDemand: .max(1))
        inners[0].send(10)
        inners[0].send(completion: .failure(.boom))
        #expect(recorder.values == [10])
        #expect(inners[1].subscriptions.count == 1)
        #expect(inners[1].subscriptions[0].requestedDemands == [], "downstream has no demand left")
        recorder.request(.max(1))
        #expect(recorder.values == [10, -1])
        #expect(inners[1].subscriptions[0].requestedDemands == [])
        recorder.request(.max(2))
        #expect(inners[1].subscriptions[0].requestedDemands == [.max(2)])
        for value in 1...3 {
            inners[1].send(value)
        }
        #expect(recorder.values == [10, -1, 1, 2])
        #expect(inners[1].subscriptions[0].bufferedCount == 1, "the third value waits in the inner, not in the operator")
        #expect(recorder.violations.isEmpty)
    }

    @Test("with maxPublishers above 1 and a stalled oldest inner, every later element runs and is buffered (as documented)")
    func stalledHeadDrainsUpstream() {
        let stalled = TestPublisher<Int, Never>()
        var subscribed = 0
        let recorder = Publishers.Sequence<[Int], Never>(sequence: Array(0..<100))
            .flatMapSequential(maxPublishers: .max(2)) { element -> AnyPublisher<Int, Never> in
                subscribed += 1
                return element == 0 ? stalled.eraseToAnyPublisher() : Just(element).eraseToAnyPublisher()
            }
            .record()
        #expect(subscribed == 100)
        #expect(recorder.values.isEmpty)
        stalled.send(completion: .finished)
        #expect(recorder.values == Array(1..<100))
        #expect(recorder.isFinished)
    }

    @Test("handles 10,000 synchronous inners without deep recursion, in order")
    func synchronousInners() {
        let recorder = Publishers.Sequence<[Int], Never>(sequence: Array(0..<10_000))
            .flatMapSequential(maxPublishers: .max(4)) { Just($0) }
            .record()
        #expect(recorder.values == Array(0..<10_000))
        #expect(recorder.isFinished)
    }

    @Test("allows downstream to request and cancel from inside receive")
    func reentrancy() {
        let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1))
        recorder.onValue = { value in
            if value == 3 {
                recorder.cancel()
            } else {
                recorder.request(.max(1))
            }
            return .none
        }
        let upstream = TestPublisher<Int, Never>()
        upstream.flatMapSequential(maxPublishers: .max(2)) { Just($0) }.subscribe(recorder)
        for value in 0..<6 {
            upstream.send(value)
        }
        #expect(recorder.values == [0, 1, 2, 3])
        #expect(upstream.cancelCount == 1)
        #expect(recorder.violations.isEmpty)
    }
}
