import OpenCombine
import RiversTesting
import Testing

/// The test support must be trustworthy before any marble test is.
@Suite("RiversTesting")
struct RiversTestingTests {
    @Test("a marble line parses into timed events; groups share a frame, spaces are ignored")
    func timelineParsing() {
        let timeline = Timeline<String, TestError>("-a (bc)- #", error: .boom)
        #expect(timeline.events == [
            TimedEvent(frame: 1, event: .value("a")),
            TimedEvent(frame: 2, event: .value("b")),
            TimedEvent(frame: 2, event: .value("c")),
            TimedEvent(frame: 4, event: .failure(.boom)),
        ])
        #expect(Timeline<Int, Never>("-x-|", values: ["x": 7]).values == [7])
        #expect(timeline.description == "-a(bc)-#boom")
    }

    @Test("the scheduler runs actions in time order, then in scheduling order")
    func schedulerOrder() {
        let scheduler = VirtualTimeScheduler()
        var log: [String] = []
        scheduler.schedule(atFrame: 2) { log.append("b") }
        scheduler.schedule(atFrame: 1) { log.append("a") }
        scheduler.schedule(atFrame: 2) { log.append("c") }
        scheduler.advance(toFrame: 1)
        #expect(log == ["a"])
        #expect(scheduler.currentFrame == 1)
        scheduler.run()
        #expect(log == ["a", "b", "c"])
        #expect(scheduler.currentFrame == 2)
    }

    @Test("a repeating action runs every interval until cancelled")
    func repeating() {
        let scheduler = VirtualTimeScheduler()
        var ticks: [Int] = []
        let cancellable = scheduler.schedule(after: .frame(1), interval: .frames(2)) {
            ticks.append(scheduler.currentFrame)
        }
        scheduler.advance(toFrame: 6)
        cancellable.cancel()
        scheduler.run()
        #expect(ticks == [1, 3, 5])
    }

    @Test("time operators of OpenCombine run on virtual time")
    func debounce() {
        let scheduler = VirtualTimeScheduler()
        let input: TestPublisher<String, Never> = scheduler.hotPublisher("-ab---c--|")
        let recorder = input.debounce(for: .frames(2), scheduler: scheduler).record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("----b---c|"))
    }

    @Test("the recorder reports values beyond demand, events after cancel and after completion")
    func recorderViolations() {
        struct Rogue: Publisher {
            typealias Output = Int
            typealias Failure = Never
            func receive<S: Subscriber>(subscriber: S) where S.Input == Int, S.Failure == Never {
                subscriber.receive(subscription: Subscriptions.empty)
                _ = subscriber.receive(1)
                _ = subscriber.receive(2)
                subscriber.receive(completion: .finished)
                _ = subscriber.receive(3)
            }
        }
        let recorder = Rogue().record(initialDemand: .max(1))
        #expect(recorder.violations == [
            "value 2 beyond the demand requested",
            "value 3 after completion",
            "value 3 beyond the demand requested",
        ])
    }

    @Test("a test publisher buffers what it cannot deliver and records demand and cancels")
    func testPublisher() {
        let publisher = TestPublisher<Int, Never>()
        let recorder = publisher.record(initialDemand: .max(1))
        publisher.send(1)
        publisher.send(2)
        publisher.send(completion: .finished)
        #expect(recorder.values == [1])
        #expect(publisher.subscriptions[0].bufferedCount == 2)
        recorder.request(.max(1))
        #expect(recorder.values == [1, 2])
        #expect(recorder.isFinished)
        #expect(publisher.subscriptions[0].requestedDemands == [.max(1), .max(1)])
        #expect(publisher.cancelCount == 0)
    }

    @Test("a cold publisher plays its line from each subscription's start")
    func coldPublisher() {
        let scheduler = VirtualTimeScheduler()
        let cold: TestPublisher<String, Never> = scheduler.coldPublisher("-a|")
        let first = cold.record(on: scheduler)
        scheduler.advance(toFrame: 3)
        let second = cold.record(on: scheduler)
        scheduler.run()
        #expect(first.timeline == Timeline("-a|"))
        #expect(second.timeline == Timeline("----a|"))
    }
}
