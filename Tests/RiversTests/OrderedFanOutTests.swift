import OpenCombine
import Rivers
import RiversTesting
import Testing

@Suite("orderedFanOut")
struct OrderedFanOutTests {
    @Test("emits one array of results in input order however they complete")
    func marbles() {
        let scheduler = VirtualTimeScheduler()
        let inner: [String: TestPublisher<String, TestError>] = [
            "1": scheduler.coldPublisher("--------a|"),
            "2": scheduler.coldPublisher("--b|"),
            "3": scheduler.coldPublisher("----c|"),
        ]
        let recorder = ["1", "2", "3"]
            .orderedFanOut(maxConcurrent: 2) { inner[$0]! }
            .map { $0.joined() }
            .record(on: scheduler)
        scheduler.run()
        #expect(recorder.timeline == Timeline("---------(A|)", values: ["A": "abc"]))
        #expect(inner["3"]!.subscriptions[0].subscribedAtFrame == 3)
    }

    @Test("an empty array gives an empty result")
    func empty() {
        let recorder = [Int]().orderedFanOut(maxConcurrent: 4) { Just($0) }.record()
        #expect(recorder.values == [[]])
        #expect(recorder.isFinished)
    }

    @Test("failure policies: .fail fails, .replace(with:) fills in, .skip leaves out")
    func policies() {
        func fetch(_ id: Int) -> AnyPublisher<Int, TestError> {
            id == 2 ? Fail(error: .boom).eraseToAnyPublisher() : Just(id * 10).setFailureType(to: TestError.self).eraseToAnyPublisher()
        }
        let ids = [1, 2, 3]
        #expect(ids.orderedFanOut(maxConcurrent: 2, fetch).record().failure == .boom)
        #expect(ids.orderedFanOut(maxConcurrent: 2, onFailure: .replace(with: -1), fetch).record().values == [[10, -1, 30]])
        #expect(ids.orderedFanOut(maxConcurrent: 2, onFailure: .replace { id, _ in -id }, fetch).record().values == [[10, -2, 30]])
        #expect(ids.orderedFanOut(maxConcurrent: 2, onFailure: .skip, fetch).record().values == [[10, 30]])
    }

    @Test("cancelling cancels every running publisher exactly once and starts no more")
    func cancellation() {
        let inners = (0..<5).map { _ in TestPublisher<Int, Never>() }
        let recorder = Array(0..<5).orderedFanOut(maxConcurrent: 2) { inners[$0] }.record()
        recorder.cancel()
        #expect(inners.map(\.cancelCount) == [1, 1, 0, 0, 0])
        #expect(inners[2...].allSatisfy { $0.subscriptions.isEmpty })
    }

    @Test("the single array waits for demand")
    func demand() {
        let recorder = [1, 2].orderedFanOut(maxConcurrent: 1) { Just($0) }.record(initialDemand: .none)
        #expect(recorder.events.isEmpty)
        recorder.request(.max(1))
        #expect(recorder.values == [[1, 2]])
        #expect(recorder.isFinished)
    }
}
