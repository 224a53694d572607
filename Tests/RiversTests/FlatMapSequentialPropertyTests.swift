import OpenCombine
import PropertyBased
import Rivers
import RiversTesting
import Testing

/// Properties of `flatMapSequential` under random arrival times, completion orders, output
/// counts, failures, concurrency limits, failure policies and downstream demand.
@Suite("FlatMapSequential properties")
struct FlatMapSequentialPropertyTests {
    /// How one element behaves: when it arrives, how long its inner publisher runs, what
    /// it emits, and whether it fails.
    struct ElementSpec: Sendable, CustomStringConvertible {
        var arrivalGap: Int
        var duration: Int
        var outputCount: Int
        var fails: Bool

        var description: String { "(gap \(arrivalGap), \(duration)f, \(outputCount) out\(fails ? ", fails" : ""))" }
    }

    static let elements = zip(
        Gen.int(in: 0...2),
        Gen.int(in: 0...6),
        Gen.int(in: 0...2),
        Gen.bool(0.25)
    )
    .map { ElementSpec(arrivalGap: $0, duration: $1, outputCount: $2, fails: $3) }
    .array(of: 0...12)

    enum Policy: Int, CaseIterable, Sendable {
        case fail, replace, skip
    }

    static func outputs(of index: Int, _ spec: ElementSpec) -> [Int] {
        (0..<spec.outputCount).map { index * 10 + $0 }
    }

    static func fallback(of index: Int) -> Int { 1_000 + index }

    /// Runs one random scenario and returns what the downstream saw and how the inners ran.
    static func run(
        _ specs: [ElementSpec],
        maxConcurrent: Int,
        policy: Policy,
        demandStep: Int
    ) -> (recorder: RecordingSubscriber<Int, TestError>, probe: ConcurrencyProbe, inners: [TestPublisher<Int, TestError>]) {
        let scheduler = VirtualTimeScheduler()
        var frame = 0
        var upstreamEvents: [TimedEvent<Int, TestError>] = []
        for (index, spec) in specs.enumerated() {
            frame += spec.arrivalGap
            upstreamEvents.append(TimedEvent(frame: frame, event: .value(index)))
        }
        upstreamEvents.append(TimedEvent(frame: frame, event: .finished))
        let upstream = scheduler.coldPublisher(Timeline(events: upstreamEvents))

        let inners = specs.enumerated().map { index, spec in
            var events = outputs(of: index, spec).enumerated().map { offset, value in
                TimedEvent<Int, TestError>(frame: min(offset, spec.duration), event: .value(value))
            }
            events.append(TimedEvent(frame: spec.duration, event: spec.fails ? .failure(.boom) : .finished))
            return scheduler.coldPublisher(Timeline(events: events))
        }

        let failurePolicy: SequentialFailurePolicy<Int, Int, TestError>
        switch policy {
        case .fail: failurePolicy = .fail
        case .replace: failurePolicy = .replace { element, _ in fallback(of: element) }
        case .skip: failurePolicy = .skip
        }

        let probe = ConcurrencyProbe()
        let recorder = upstream
            .flatMapSequential(maxPublishers: .max(maxConcurrent), onFailure: failurePolicy) { index in
                probe.track(inners[index])
            }
            .record(on: scheduler, initialDemand: demandStep == 0 ? .unlimited : .max(demandStep))
        scheduler.run()
        var steps = 0
        while recorder.completion == nil && steps < 1_000 {
            recorder.request(.max(max(demandStep, 1)))
            scheduler.run()
            steps += 1
        }
        return (recorder, probe, inners)
    }

    @Test("outputs keep element order, the concurrency limit holds and the failure policy is obeyed")
    func orderLimitAndPolicy() async {
        await propertyCheck(
            count: 300,
            input: Self.elements,
            Gen.int(in: 1...4),
            Gen<Policy>.case,
            Gen.int(in: 0...3)
        ) { specs, maxConcurrent, policy, demandStep in
            let (recorder, probe, inners) = Self.run(
                specs, maxConcurrent: maxConcurrent, policy: policy, demandStep: demandStep
            )

            #expect(recorder.violations.isEmpty, "never more than requested, nothing after completion")
            #expect(probe.maxRunning <= maxConcurrent, "concurrency limit")
            #expect(probe.running == 0, "nothing left running")
            #expect(inners.allSatisfy { $0.subscriptions.count <= 1 && $0.cancelCount <= 1 })
            if maxConcurrent == 1 && demandStep > 0 {
                let asked = inners.flatMap { $0.subscriptions.flatMap(\.requestedDemands) }
                #expect(!asked.contains(.unlimited), "maxPublishers 1 is fully back-pressured")
            }

            let firstFailure = specs.firstIndex { $0.fails }
            switch (policy, firstFailure) {
            case let (.fail, failing?):
                #expect(recorder.failure == .boom)
                let allowed = specs.prefix(through: failing).enumerated().flatMap { Self.outputs(of: $0, $1) }
                #expect(Array(allowed.prefix(recorder.values.count)) == recorder.values, "a prefix in element order")
            case (.fail, nil), (.skip, _):
                #expect(recorder.isFinished)
                #expect(recorder.values == specs.enumerated().flatMap { Self.outputs(of: $0, $1) })
                #expect(probe.started == specs.count)
            case (.replace, _):
                #expect(recorder.isFinished)
                let expected = specs.enumerated().flatMap { index, spec in
                    Self.outputs(of: index, spec) + (spec.fails ? [Self.fallback(of: index)] : [])
                }
                #expect(recorder.values == expected)
                #expect(probe.started == specs.count)
            }
        }
    }

    @Test("orderedFanOut returns every result in input order whatever the completion order")
    func orderedFanOutOrder() async {
        await propertyCheck(
            count: 200,
            input: Gen.int(in: 0...8).array(of: 0...20),
            Gen.int(in: 1...5)
        ) { durations, maxConcurrent in
            let scheduler = VirtualTimeScheduler()
            let probe = ConcurrencyProbe()
            let recorder = Array(durations.indices)
                .orderedFanOut(maxConcurrent: maxConcurrent) { index in
                    probe.track(
                        scheduler.coldPublisher(Timeline<Int, TestError>(events: [
                            TimedEvent(frame: durations[index], event: .value(index)),
                            TimedEvent(frame: durations[index], event: .finished),
                        ]))
                    )
                }
                .record(on: scheduler)
            scheduler.run()
            #expect(recorder.values == [Array(durations.indices)])
            #expect(recorder.isFinished)
            #expect(probe.maxRunning <= maxConcurrent)
            #expect(probe.maxRunning == min(maxConcurrent, durations.count))
        }
    }
}
