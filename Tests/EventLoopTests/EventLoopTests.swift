import Glibc
import EventLoop
import OpenCombine
import Testing
import TributaryTesting

@Suite("Event loop, timers and scheduler")
struct EventLoopTests {
    @Test("work handed over from another thread runs on the loop's thread, in order")
    func executeFromAnotherThread() async throws {
        let thread = try LoopThread()
        let seen = Observed<[Int]>([])
        for index in 0..<100 {
            thread.loop.execute { [loop = thread.loop] in
                precondition(loop.isCurrent)
                seen.update { $0.append(index) }
            }
        }
        #expect(await seen.wait(timeout: .seconds(5)) { $0.count == 100 })
        #expect(seen.value == Array(0..<100))
        #expect(!thread.loop.isCurrent)
        await thread.stop()
    }

    @Test("a repeating timer fires until cancelled")
    func repeatingTimer() async throws {
        let thread = try LoopThread()
        let ticks = Observed(0)
        let timer = try await thread.run { loop in
            let timer = LoopTimer(loop: loop) { ticks.update { $0 += 1 } }
            timer.scheduleRepeating(every: .milliseconds(5))
            return LoopBound(timer, loop: loop)
        }
        #expect(await ticks.wait(timeout: .seconds(5)) { $0 >= 3 })
        let stoppedAt = try await thread.run { _ in
            timer.value.cancel()
            return (ticks.value, timer.value.isScheduled)
        }
        #expect(stoppedAt.1 == false)
        // Several timer intervals later, a cancelled timer has stayed silent.
        let waited = Observed(false)
        try await thread.run { loop in
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(30))) { waited.update { $0 = true } }
        }
        #expect(await waited.wait(timeout: .seconds(5)) { $0 })
        #expect(ticks.value == stoppedAt.0)
        await thread.stop { timer.release() }
    }

    @Test("OpenCombine's delay and debounce run on the loop scheduler in real time")
    func schedulerDrivesTimeOperators() async throws {
        let thread = try LoopThread()
        let events = Observed<[String]>([])
        let start = ContinuousClock.now
        let pipeline = try await thread.run { loop in
            let scheduler = EventLoopScheduler(loop: loop)
            let subject = PassthroughSubject<String, Never>()
            let debounced = subject
                .debounce(for: .milliseconds(40), scheduler: scheduler)
                .sink { value in events.update { $0.append("debounced \(value)") } }
            let delayed = Just("hello")
                .delay(for: .milliseconds(30), scheduler: scheduler)
                .sink { value in events.update { $0.append("delayed \(value)") } }
            for value in ["a", "b", "c"] { subject.send(value) }
            return LoopBound((debounced, delayed, subject), loop: loop)
        }
        #expect(await events.wait(timeout: .seconds(5)) { $0.count == 2 })
        #expect(events.value == ["delayed hello", "debounced c"])
        #expect(ContinuousClock.now - start >= .milliseconds(40))
        await thread.stop { pipeline.release() }
    }

    @Test("a repeating scheduled action keeps firing until its Cancellable is cancelled")
    func schedulerRepeatingAction() async throws {
        let thread = try LoopThread()
        let ticks = Observed(0)
        let cancellable = try await thread.run { loop in
            let scheduler = EventLoopScheduler(loop: loop)
            let cancellable = scheduler.schedule(after: scheduler.now, interval: .milliseconds(5)) {
                ticks.update { $0 += 1 }
            }
            return LoopBound(cancellable, loop: loop)
        }
        #expect(await ticks.wait(timeout: .seconds(5)) { $0 >= 3 })
        try await thread.run { _ in cancellable.value.cancel() }
        let afterCancel = ticks.value
        let scheduled = Observed(false)
        try await thread.run { loop in
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(30))) { scheduled.update { $0 = true } }
        }
        #expect(await scheduled.wait(timeout: .seconds(5)) { $0 })
        #expect(ticks.value == afterCancel)
        await thread.stop { cancellable.release() }
    }

    @Test("a signal reaches its watcher as an ordinary loop callback")
    func signalWatcher() async throws {
        let thread = try LoopThread()
        let received = Observed(false)
        let watcher = try await thread.run { loop in
            let watcher = try SignalWatcher(loop: loop, signal: SIGUSR2) {
                precondition(loop.isCurrent)
                received.update { $0 = true }
            }
            return LoopBound(watcher, loop: loop)
        }
        kill(getpid(), SIGUSR2)
        #expect(await received.wait(timeout: .seconds(5)) { $0 })
        await thread.stop { watcher.release() }
    }
}
