import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("Paginated")
struct PaginatedTests {
    typealias MediaPage = Page<String, Int>

    /// A page publisher that answers `delay` frames after it is subscribed.
    private func page(
        _ scheduler: VirtualTimeScheduler,
        _ items: String,
        next: Int?,
        delay: Int = 1
    ) -> TestPublisher<MediaPage, TestError> {
        scheduler.coldPublisher(Timeline(events: [
            TimedEvent(frame: delay, event: .value(Page(items: items.map(String.init), next: next))),
            TimedEvent(frame: delay, event: .finished),
        ]))
    }

    @Test("loads the first page, then the next one on each signal, until the cursor runs out")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let signal: TestPublisher<String, Never> = scheduler.hotPublisher("---------x------x-------x--")
        let pages = [
            2: page(scheduler, "c", next: 3),
            3: page(scheduler, "d", next: nil),
        ]
        let recorder = Publishers.paginated(
            firstPage: page(scheduler, "ab", next: 2),
            nextPage: { pages[$0]! },
            loadingNextOn: signal
        )
        .map { $0.joined() }
        .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-A--------B------(C|)", values: ["A": "ab", "B": "abc", "C": "abcd"]))
        #expect(pages[2]!.subscriptions[0].subscribedAtFrame == 9)
        #expect(pages[3]!.subscriptions[0].subscribedAtFrame == 16)
        #expect(signal.subscriptions.count == 2)
        #expect(signal.subscriptions.allSatisfy { $0.cancelCount == 1 })
        #expect(recorder.violations.isEmpty)
    }

    @Test("signals while a page is loading are ignored")
    func signalsWhileLoading() {
        let scheduler = VirtualTimeScheduler()
        let signal: TestPublisher<String, Never> = scheduler.hotPublisher("--xx-x")
        let pages = [
            2: page(scheduler, "b", next: 3, delay: 2),
            3: page(scheduler, "c", next: nil),
        ]
        let recorder = Publishers.paginated(
            firstPage: page(scheduler, "a", next: 2),
            nextPage: { pages[$0]! },
            loadingNextOn: signal
        )
        .map { $0.joined() }
        .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("-A--B-(C|)", values: ["A": "a", "B": "ab", "C": "abc"]))
    }

    @Test("works with a Trigger signal and finishes on a last page")
    func withTrigger() {
        let trigger = Trigger()
        let recorder = Publishers.paginated(
            firstPage: Just(Page(items: [1, 2], next: 1)),
            nextPage: { cursor in Just(Page(items: [cursor * 10], next: cursor < 2 ? cursor + 1 : nil)) },
            loadingNextOn: trigger.signal(activatedBy: "more")
        )
        .record()
        #expect(recorder.values == [[1, 2]])
        trigger.activate(for: "more")
        trigger.activate(for: "more")
        #expect(recorder.values == [[1, 2], [1, 2, 10], [1, 2, 10, 20]])
        #expect(recorder.isFinished)
    }

    @Test("a page failure fails the publisher")
    func failure() {
        let trigger = Trigger()
        let recorder = Publishers.paginated(
            firstPage: Just(Page(items: ["a"], next: 1)).setFailureType(to: TestError.self),
            nextPage: { _ in Fail<Page<String, Int>, TestError>(error: .boom) },
            loadingNextOn: trigger.signal(activatedBy: 0)
        )
        .record()
        trigger.activate(for: 0)
        #expect(recorder.values == [["a"]])
        #expect(recorder.failure == .boom)
    }

    @Test("finishes when the signal finishes while waiting: no further page can load")
    func signalFinishes() {
        let recorder = Publishers.paginated(
            firstPage: Just(Page(items: ["a"], next: 1)),
            nextPage: { _ in Just(Page(items: ["b"], next: nil)) },
            loadingNextOn: Empty<Void, Never>()
        )
        .record()
        #expect(recorder.values == [["a"]])
        #expect(recorder.isFinished)
    }

    @Test("cancelling cancels the loading page, or the signal while waiting, exactly once")
    func cancellation() {
        let loading = TestPublisher<Page<String, Int>, Never>()
        let whileLoading = Publishers.paginated(firstPage: loading, nextPage: { _ in loading }, loadingNextOn: Just(()))
            .record()
        whileLoading.cancel()
        #expect(loading.cancelCount == 1)

        let signal = TestPublisher<Void, Never>()
        let whileWaiting = Publishers.paginated(
            firstPage: Just(Page(items: ["a"], next: 1)),
            nextPage: { _ in Just(Page(items: ["b"], next: nil)) },
            loadingNextOn: signal
        )
        .record()
        whileWaiting.cancel()
        signal.send(())
        #expect(signal.cancelCount == 1)
        #expect(whileWaiting.values == [["a"]])
    }

    @Test("10,000 synchronous pages (signal Just: load everything) finish, at a stack depth that does not grow")
    func synchronousPages() {
        let lastCursor = 9_999
        var stackAddresses: [Int: Int] = [:]
        let recorder = Publishers.paginated(
            firstPage: Just(Page(items: [0], next: 1)),
            nextPage: { cursor in
                if cursor == 10 || cursor == lastCursor {
                    stackAddresses[cursor] = currentStackAddress()
                }
                return Just(Page(items: [cursor], next: cursor < lastCursor ? cursor + 1 : nil))
            },
            loadingNextOn: Just(())
        )
        .map(\.count)
        .record()
        #expect(recorder.values.last == lastCursor + 1)
        #expect(recorder.isFinished)
        let growth = abs((stackAddresses[lastCursor] ?? 0) - (stackAddresses[10] ?? 0))
        #expect(growth < 16_384, "the stack grew by \(growth) bytes over \(lastCursor - 10) pages")
    }

    @Test("never sends more than requested: pages loaded without demand are coalesced")
    func demand() {
        let trigger = Trigger()
        let recorder = Publishers.paginated(
            firstPage: Just(Page(items: [1], next: 2)),
            nextPage: { cursor in Just(Page(items: [cursor], next: cursor + 1)) },
            loadingNextOn: trigger.signal(activatedBy: "more")
        )
        .record(initialDemand: .none)
        trigger.activate(for: "more")
        trigger.activate(for: "more")
        #expect(recorder.events.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [[1, 2, 3]])
        trigger.activate(for: "more")
        recorder.request(.max(1))
        #expect(recorder.values == [[1, 2, 3], [1, 2, 3, 4]])
        #expect(recorder.violations.isEmpty)
    }
}
