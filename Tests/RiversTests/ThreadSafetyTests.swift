import Dispatch
import OpenCombine
import Rivers
import RiversTesting
import Testing

/// Tributary runs each pipeline on one event-loop thread, but the operators keep the Combine
/// contract when their inputs publish from several threads at once: downstream calls are
/// serialised and demand is respected.
@Suite("Thread safety")
struct ThreadSafetyTests {
    static let threads = 4
    static let valuesPerThread = 5_000

    @Test("MergeMany serialises values sent from several threads")
    func mergeMany() {
        let subjects = (0..<Self.threads).map { _ in PassthroughSubject<Int, Never>() }
        let recorder = subjects.merged().record()
        nonisolated(unsafe) let inputs = subjects
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for value in 0..<Self.valuesPerThread {
                inputs[thread].send(value)
            }
        }
        #expect(recorder.values.count == Self.threads * Self.valuesPerThread)
        #expect(recorder.violations.isEmpty)
    }

    @Test("AccumulateLatestMany ends with every input's last value, from several threads")
    func accumulateLatestMany() {
        let subjects = (0..<Self.threads).map { _ in PassthroughSubject<Int, Never>() }
        let recorder = subjects.accumulateLatest().record()
        nonisolated(unsafe) let inputs = subjects
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for value in 0..<Self.valuesPerThread {
                inputs[thread].send(value)
            }
        }
        #expect(recorder.values.last == Array(repeating: Self.valuesPerThread - 1, count: Self.threads))
        #expect(recorder.violations.isEmpty)
    }

    @Test("flatMapSequential keeps element order when inners complete on other threads")
    func flatMapSequential() {
        let count = 2_000
        let inners = (0..<count).map { _ in PassthroughSubject<Int, Never>() }
        let recorder = Publishers.Sequence<[Int], Never>(sequence: Array(0..<count))
            .flatMapSequential(maxPublishers: .unlimited) { inners[$0] }
            .record()
        nonisolated(unsafe) let subjects = inners
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for index in stride(from: thread, to: count, by: Self.threads) {
                subjects[index].send(index)
                subjects[index].send(completion: .finished)
            }
        }
        #expect(recorder.values == Array(0..<count))
        #expect(recorder.isFinished)
        #expect(recorder.violations.isEmpty)
    }
}
