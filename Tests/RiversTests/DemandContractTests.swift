import OpenCombine
import Rivers
import RiversTesting
import Testing

/// Every operator, driven by inputs that publish far more than downstream asks for, must
/// never deliver more values than were requested.
@Suite("Demand contract")
struct DemandContractTests {
    enum Operator: String, CaseIterable, Sendable {
        case combineLatest, combineLatest3, combineLatest4, accumulateLatestMany
        case merge, mergeMany, flatMapSequential, orderedFanOut, flatMapLatest
        case waitUntilOutput, publish, publishAndRepeat, asResult, paginated, trigger, input

        /// The pipeline under test, and a function that pushes one more round of input.
        func make() -> (publisher: AnyPublisher<Int, Never>, push: (Int) -> Void) {
            let a = PassthroughSubject<Int, Never>()
            let b = PassthroughSubject<Int, Never>()
            let pushBoth: (Int) -> Void = { value in
                a.send(value)
                b.send(value)
            }
            switch self {
            case .combineLatest:
                return (a.combineLatest(b) { $0 + $1 }.eraseToAnyPublisher(), pushBoth)
            case .combineLatest3:
                return (a.combineLatest(b, a) { $0 + $1 + $2 }.eraseToAnyPublisher(), pushBoth)
            case .combineLatest4:
                return (a.combineLatest(b, a, b) { $0 + $1 + $2 + $3 }.eraseToAnyPublisher(), pushBoth)
            case .accumulateLatestMany:
                return ([a, b, a].accumulateLatest().map { $0.reduce(0, +) }.eraseToAnyPublisher(), pushBoth)
            case .merge:
                return (a.merge(with: b).eraseToAnyPublisher(), pushBoth)
            case .mergeMany:
                return ([a, b, a].merged().eraseToAnyPublisher(), pushBoth)
            case .flatMapSequential:
                return (a.flatMapSequential(maxPublishers: .max(2)) { [$0, $0].publisher }.eraseToAnyPublisher(), pushBoth)
            case .orderedFanOut:
                return (
                    a.flatMapLatest { value in (0..<value).orderedFanOut(maxConcurrent: 3) { Just($0) } }
                        .map(\.count)
                        .eraseToAnyPublisher(),
                    pushBoth
                )
            case .flatMapLatest:
                return (a.flatMapLatest { [$0, $0, $0].publisher }.eraseToAnyPublisher(), pushBoth)
            case .waitUntilOutput:
                let signal = PassthroughSubject<Void, Never>()
                return (a.wait(untilOutputFrom: signal).eraseToAnyPublisher(), { value in
                    signal.send(())
                    a.send(value)
                })
            case .publish:
                let signal = PassthroughSubject<Void, Never>()
                return (Publishers.Publish(onOutputFrom: signal) { a }.eraseToAnyPublisher(), { value in
                    signal.send(())
                    a.send(value)
                })
            case .publishAndRepeat:
                let signal = PassthroughSubject<Void, Never>()
                return (Publishers.PublishAndRepeat(onOutputFrom: signal) { [1, 2, 3].publisher }.eraseToAnyPublisher(), { _ in
                    signal.send(())
                })
            case .asResult:
                let failing = PassthroughSubject<Int, TestError>()
                return (
                    failing.asResult().map { (try? $0.get()) ?? -1 }.eraseToAnyPublisher(),
                    { value in
                        failing.send(value)
                        if value == 15 { failing.send(completion: .failure(.boom)) }
                    }
                )
            case .paginated:
                let trigger = Trigger()
                let pages = Publishers.paginated(
                    firstPage: Just(Page(items: [0], next: 1)),
                    nextPage: { Just(Page(items: [$0], next: $0 + 1)) },
                    loadingNextOn: trigger.signal(activatedBy: "more")
                )
                return (pages.map(\.count).eraseToAnyPublisher(), { _ in trigger.activate(for: "more") })
            case .trigger:
                let trigger = Trigger()
                return (trigger.signal(activatedBy: 1).map { 1 }.eraseToAnyPublisher(), { _ in trigger.activate(for: 1) })
            case .input:
                let input = Input(0)
                return (input.eraseToAnyPublisher(), { input.value = $0 })
            }
        }
    }

    @Test("never delivers more than requested when downstream asks one value at a time", arguments: Operator.allCases)
    func oneAtATime(_ operator: Operator) {
        let (publisher, push) = `operator`.make()
        let recorder = publisher.record(initialDemand: .max(1))
        for round in 1...20 {
            push(round)
            if round.isMultiple(of: 3) {
                recorder.request(.max(1))
            }
        }
        #expect(recorder.violations.isEmpty)
        #expect(recorder.values.count >= 1)
        #expect(recorder.values.count <= 7)
    }

    @Test("delivers nothing before the first request", arguments: Operator.allCases)
    func nothingWithoutDemand(_ operator: Operator) {
        let (publisher, push) = `operator`.make()
        let recorder = publisher.record(initialDemand: .none)
        for round in 1...5 {
            push(round)
        }
        #expect(recorder.values.isEmpty)
        #expect(recorder.violations.isEmpty)
    }
}
