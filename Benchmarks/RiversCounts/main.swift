// One workload of Rivers' main operators, run once for a given number of elements, for
// callgrind to count what an element costs (instructions, and calls to malloc) rather than
// for a clock to time it:
//
//     swift build -c release --product RiversCounts
//     objcopy --strip-debug .build/release/RiversCounts /tmp/RiversCounts   # valgrind 3.19 cannot read DWARF 5
//     valgrind --tool=callgrind /tmp/RiversCounts combine-latest 2000
//
// Benchmarks/budgets.py runs every workload at two sizes and divides the difference by
// the difference in elements, so what the process does once (start-up, subscribing,
// cancelling) cancels out and what is left is the cost of one more element.
//
// Top-level code in main.swift is main-actor isolated; the pipelines live in a nonisolated
// enum so that OpenCombine's closures carry no actor isolation.

#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import OpenCombine
import Rivers

enum RiversCounts {
    /// Every workload by name, each with what one of its elements is.
    static var workloads: [(name: String, element: String, run: (Int) -> Int)] { [
        ("combine-latest", "a value on one of two inputs, one tuple out", combineLatest),
        ("merge", "a value on one of two inputs, passed on", merge),
        ("flat-map-sequential", "an upstream value mapped to a Just, passed on in order", flatMapSequential),
        ("ordered-fan-out", "an element of a 10-element orderedFanOut, as for N=10 /groups", orderedFanOut),
        ("share-latest", "an upstream value shared with 4 subscribers", shareLatest),
        ("accumulate-latest-many", "an update of one of 100 inputs, the array of 100 out", accumulateLatestMany),
    ] }

    static func main(arguments: [String]) {
        guard arguments.count == 2, let workload = workloads.first(where: { $0.name == arguments[0] }),
              let elements = Int(arguments[1]), elements > 0
        else {
            print("usage: RiversCounts WORKLOAD ELEMENTS, with WORKLOAD one of:")
            for workload in workloads {
                print("  \(workload.name): \(workload.element)")
            }
            exit(2)
        }
        print("\(workload.name), \(elements) elements: checksum \(workload.run(elements))")
    }

    static func combineLatest(elements: Int) -> Int {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        var checksum = 0
        let cancellable = a.combineLatest(b).sink { checksum &+= $0 &+ $1 }
        a.send(0)
        b.send(0)
        for element in 0..<elements {
            (element.isMultiple(of: 2) ? a : b).send(element)
        }
        cancellable.cancel()
        return checksum
    }

    static func merge(elements: Int) -> Int {
        let a = PassthroughSubject<Int, Never>()
        let b = PassthroughSubject<Int, Never>()
        var checksum = 0
        let cancellable = a.merge(with: b).sink { checksum &+= $0 }
        for element in 0..<elements {
            (element.isMultiple(of: 2) ? a : b).send(element)
        }
        cancellable.cancel()
        return checksum
    }

    static func flatMapSequential(elements: Int) -> Int {
        let upstream = PassthroughSubject<Int, Never>()
        var checksum = 0
        let cancellable = upstream.flatMapSequential(maxPublishers: .max(8)) { Just($0) }.sink { checksum &+= $0 }
        for element in 0..<elements {
            upstream.send(element)
        }
        cancellable.cancel()
        return checksum
    }

    /// Whole fan-outs of 10 elements, subscribed and finished each time: `elements` is
    /// rounded down to a multiple of 10.
    static func orderedFanOut(elements: Int) -> Int {
        let ids = Array(0..<10)
        var checksum = 0
        for _ in 0..<elements / ids.count {
            let cancellable = ids.orderedFanOut(maxConcurrent: 8) { Just($0) }.sink { checksum &+= $0.count }
            cancellable.cancel()
        }
        return checksum
    }

    static func shareLatest(elements: Int) -> Int {
        let upstream = PassthroughSubject<Int, Never>()
        let shared = upstream.shareLatest()
        var checksum = 0
        let cancellables = (0..<4).map { _ in shared.sink { checksum &+= $0 } }
        for element in 0..<elements {
            upstream.send(element)
        }
        cancellables.forEach { $0.cancel() }
        return checksum
    }

    static func accumulateLatestMany(elements: Int) -> Int {
        let inputs = (0..<100).map { _ in PassthroughSubject<Int, Never>() }
        var checksum = 0
        let cancellable = inputs.accumulateLatest().sink { checksum &+= $0.count }
        for (index, input) in inputs.enumerated() {
            input.send(index)
        }
        for element in 0..<elements {
            inputs[element % inputs.count].send(element)
        }
        cancellable.cancel()
        return checksum
    }
}

RiversCounts.main(arguments: Array(CommandLine.arguments.dropFirst()))
