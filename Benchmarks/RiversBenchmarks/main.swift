// Release-build timings of Rivers' hot paths: plain ContinuousClock measurements, a few
// repetitions, medians printed.
//
//     swift run -c release RiversBenchmarks
//
// Top-level code in main.swift is main-actor isolated; the pipelines live in a nonisolated
// enum so that OpenCombine's closures carry no actor isolation.

import OpenCombine
import Rivers

enum RiversBenchmarks {
    static let repetitions = 7

    struct Result {
        let name: String
        let nanosecondsPerOperation: Double
        let unit: String
    }

    /// Every benchmark by name; `RiversBenchmarks NAME...` runs only those.
    static var benchmarks: [(name: String, run: (inout Int) -> Result)] { [
        ("accumulate", { accumulateLatestMany(inputs: 1_000, updates: 200_000, keepArrays: false, checksum: &$0) }),
        ("accumulate-keep", { accumulateLatestMany(inputs: 1_000, updates: 50_000, keepArrays: true, checksum: &$0) }),
        ("subject", { bareSubject(updates: 200_000, checksum: &$0) }),
        ("nested-combine-latest", { nestedCombineLatest(inputs: 1_000, updates: 1_000, checksum: &$0) }),
        ("flat-map-sequential", { flatMapSequential(elements: 1_000, runs: 200, checksum: &$0) }),
        ("ordered-fan-out", { orderedFanOut(elements: 1_000, runs: 200, checksum: &$0) }),
        ("opencombine-flat-map", { openCombineFlatMap(elements: 1_000, runs: 200, checksum: &$0) }),
        ("flat-map-latest", { flatMapLatest(elements: 1_000, runs: 200, checksum: &$0) }),
        ("flat-map-latest-outputs", { flatMapLatestOutputs(updates: 200_000, checksum: &$0) }),
        ("publish", { publish(activations: 100_000, atOnce: false, checksum: &$0) }),
        ("publish-and-repeat", { publish(activations: 100_000, atOnce: true, checksum: &$0) }),
    ] }

    static func main(arguments: [String]) {
        let selected = arguments.isEmpty ? benchmarks : benchmarks.filter { arguments.contains($0.name) }
        print("Rivers benchmarks (release build), median of \(repetitions) runs")
        var checksum = 0
        let results = selected.map { $0.run(&checksum) }
        for result in results {
            let figure = String(format: result.nanosecondsPerOperation)
            print("  \(result.name.padding(to: 74)) \(figure.leftPadding(to: 10)) ns/\(result.unit)")
        }
        print("  (checksum \(checksum))")
    }

    // MARK: AccumulateLatestMany

    /// One array per inner update, from 1,000 `PassthroughSubject`s. With `keepArrays` the
    /// subscriber holds on to the last array, so the next update copies it (what a real
    /// consumer costs); without, the array is handed over and updated in place.
    static func accumulateLatestMany(inputs: Int, updates: Int, keepArrays: Bool, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            let subjects = (0..<inputs).map { _ in PassthroughSubject<Int, Never>() }
            var received = 0
            var kept: [Int] = []
            let cancellable = subjects.accumulateLatest().sink { values in
                received += values.count
                if keepArrays {
                    kept = values
                }
            }
            for (index, subject) in subjects.enumerated() {
                subject.send(index)
            }
            let elapsed = ContinuousClock().measure {
                for update in 0..<updates {
                    subjects[update % inputs].send(update)
                }
            }
            cancellable.cancel()
            checksum &+= received &+ kept.count
            return nanoseconds(elapsed)
        }
        let variant = keepArrays ? "subscriber keeps each array" : "subscriber reads each array"
        return Result(
            name: "AccumulateLatestMany, \(inputs) inputs, \(variant)",
            nanosecondsPerOperation: median / Double(updates),
            unit: "update"
        )
    }

    /// For comparison: what one `PassthroughSubject.send` to a sink costs by itself.
    static func bareSubject(updates: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            let subject = PassthroughSubject<Int, Never>()
            var received = 0
            let cancellable = subject.sink { received &+= $0 }
            let elapsed = ContinuousClock().measure {
                for update in 0..<updates {
                    subject.send(update)
                }
            }
            cancellable.cancel()
            checksum &+= received
            return nanoseconds(elapsed)
        }
        return Result(
            name: "PassthroughSubject.send to a sink alone (for comparison)",
            nanosecondsPerOperation: median / Double(updates),
            unit: "update"
        )
    }

    /// For comparison: the same 1,000 inputs as a chain of nested `combineLatest`, what one
    /// would write without AccumulateLatestMany.
    static func nestedCombineLatest(inputs: Int, updates: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            let subjects = (0..<inputs).map { _ in PassthroughSubject<Int, Never>() }
            var chain = subjects[0].map { [$0] }.eraseToAnyPublisher()
            for subject in subjects.dropFirst() {
                chain = chain.combineLatest(subject) { $0 + [$1] }.eraseToAnyPublisher()
            }
            var received = 0
            let cancellable = chain.sink { received += $0.count }
            for (index, subject) in subjects.enumerated() {
                subject.send(index)
            }
            let elapsed = ContinuousClock().measure {
                for update in 0..<updates {
                    subjects[update % inputs].send(update)
                }
            }
            cancellable.cancel()
            checksum &+= received
            return nanoseconds(elapsed)
        }
        return Result(
            name: "nested combineLatest chain, \(inputs) inputs (for comparison)",
            nanosecondsPerOperation: median / Double(updates),
            unit: "update"
        )
    }

    // MARK: Ordered fan-out

    static func flatMapSequential(elements: Int, runs: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            var sum = 0
            let elapsed = ContinuousClock().measure {
                for _ in 0..<runs {
                    let cancellable = Publishers.Sequence<[Int], Never>(sequence: Array(0..<elements))
                        .flatMapSequential(maxPublishers: .max(8)) { Just($0) }
                        .sink { sum &+= $0 }
                    cancellable.cancel()
                }
            }
            checksum &+= sum
            return nanoseconds(elapsed)
        }
        return Result(
            name: "flatMapSequential(maxPublishers: 8), \(elements) immediate Just",
            nanosecondsPerOperation: median / Double(elements * runs),
            unit: "element"
        )
    }

    static func orderedFanOut(elements: Int, runs: Int, checksum: inout Int) -> Result {
        let input = Array(0..<elements)
        let median = measure { () -> Int in
            var count = 0
            let elapsed = ContinuousClock().measure {
                for _ in 0..<runs {
                    let cancellable = input
                        .orderedFanOut(maxConcurrent: 8) { Just($0) }
                        .sink { count &+= $0.count }
                    cancellable.cancel()
                }
            }
            checksum &+= count
            return nanoseconds(elapsed)
        }
        return Result(
            name: "orderedFanOut(maxConcurrent: 8), \(elements) immediate Just",
            nanosecondsPerOperation: median / Double(elements * runs),
            unit: "element"
        )
    }

    /// For comparison: OpenCombine's unordered `flatMap` over the same publishers.
    static func openCombineFlatMap(elements: Int, runs: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            var sum = 0
            let elapsed = ContinuousClock().measure {
                for _ in 0..<runs {
                    let cancellable = Publishers.Sequence<[Int], Never>(sequence: Array(0..<elements))
                        .flatMap(maxPublishers: .max(8)) { Just($0) }
                        .sink { sum &+= $0 }
                    cancellable.cancel()
                }
            }
            checksum &+= sum
            return nanoseconds(elapsed)
        }
        return Result(
            name: "OpenCombine flatMap(maxPublishers: 8), \(elements) Just (for comparison)",
            nanosecondsPerOperation: median / Double(elements * runs),
            unit: "element"
        )
    }

    // MARK: Latest inner publisher

    /// Every element replaces the inner publisher: the cost of one switch (cancel the old
    /// inner, subscribe the new one, deliver its output).
    static func flatMapLatest(elements: Int, runs: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            var sum = 0
            let elapsed = ContinuousClock().measure {
                for _ in 0..<runs {
                    let cancellable = Publishers.Sequence<[Int], Never>(sequence: Array(0..<elements))
                        .flatMapLatest { Just($0) }
                        .sink { sum &+= $0 }
                    cancellable.cancel()
                }
            }
            checksum &+= sum
            return nanoseconds(elapsed)
        }
        return Result(
            name: "flatMapLatest, \(elements) immediate Just",
            nanosecondsPerOperation: median / Double(elements * runs),
            unit: "element"
        )
    }

    /// One inner publisher that keeps emitting: the cost of an output passing through.
    static func flatMapLatestOutputs(updates: Int, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            let outer = PassthroughSubject<Void, Never>()
            let inner = PassthroughSubject<Int, Never>()
            var sum = 0
            let cancellable = outer.flatMapLatest { inner }.sink { sum &+= $0 }
            outer.send(())
            let elapsed = ContinuousClock().measure {
                for update in 0..<updates {
                    inner.send(update)
                }
            }
            cancellable.cancel()
            checksum &+= sum
            return nanoseconds(elapsed)
        }
        return Result(
            name: "flatMapLatest, outputs of one running inner PassthroughSubject",
            nanosecondsPerOperation: median / Double(updates),
            unit: "output"
        )
    }

    /// A reload: the signal emits, a new upstream (an immediate `Just`) replaces the old one.
    static func publish(activations: Int, atOnce: Bool, checksum: inout Int) -> Result {
        let median = measure { () -> Int in
            let signal = PassthroughSubject<Void, Never>()
            var sum = 0
            let cancellable = atOnce
                ? Publishers.PublishAndRepeat(onOutputFrom: signal) { Just(1) }.sink { sum &+= $0 }
                : Publishers.Publish(onOutputFrom: signal) { Just(1) }.sink { sum &+= $0 }
            let elapsed = ContinuousClock().measure {
                for _ in 0..<activations {
                    signal.send(())
                }
            }
            cancellable.cancel()
            checksum &+= sum
            return nanoseconds(elapsed)
        }
        return Result(
            name: "\(atOnce ? "PublishAndRepeat" : "Publish"), signal outputs each running a Just",
            nanosecondsPerOperation: median / Double(activations),
            unit: "activation"
        )
    }

    // MARK: Helpers

    /// Runs `body` `repetitions` times and returns the median of the nanoseconds it reports.
    static func measure(_ body: () -> Int) -> Double {
        let samples = (0..<repetitions).map { _ in body() }.sorted()
        return Double(samples[samples.count / 2])
    }

    static func nanoseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }
}

extension String {
    init(format value: Double) {
        let rounded = (value * 10).rounded() / 10
        self = "\(rounded)"
    }

    func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    func leftPadding(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

RiversBenchmarks.main(arguments: Array(CommandLine.arguments.dropFirst()))
