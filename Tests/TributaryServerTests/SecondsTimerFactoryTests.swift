import CoreMetrics
import Prometheus
import Testing
import TributaryServer

/// Timers record seconds as `Double`s (cheaper per observation than swift-prometheus's
/// `Duration` histogram), and must be exposed exactly as swift-prometheus exposes its own.
@Suite("Metrics: timers as histograms of seconds")
struct SecondsTimerFactoryTests {
    /// Durations on, just under and just over the bounds (5 ms to 10 s), and past the last.
    static let durations: [Int64] = [
        0, 1, 4_999_999, 5_000_000, 5_000_001, 10_000_000, 24_999_999, 25_000_000, 99_999_999, 100_000_000,
        250_000_001, 500_000_000, 999_999_999, 1_000_000_000, 2_500_000_000, 4_999_999_999, 5_000_000_000,
        9_999_999_999, 10_000_000_000, 10_000_000_001, 60_000_000_000,
    ]

    /// The lines of one registry's exposition of a timer that recorded ``durations``.
    private func exposition(of makeTimer: (PrometheusCollectorRegistry) -> any TimerHandler) -> [Substring] {
        let registry = PrometheusCollectorRegistry()
        let timer = makeTimer(registry)
        for duration in Self.durations { timer.recordNanoseconds(duration) }
        return registry.emitToString().split(separator: "\n")
    }

    @Test("a timer is exposed as swift-prometheus exposes its own, line for line: type, le labels, counts; the sum in seconds")
    func sameExposition() throws {
        let dimensions = [("upstream", "tasks"), ("route", "/groups/{id}")]
        let reference = exposition { PrometheusMetricsFactory(registry: $0).makeTimer(label: "call_seconds", dimensions: dimensions) }
        let seconds = exposition { SecondsTimerFactory(registry: $0).makeTimer(label: "call_seconds", dimensions: dimensions) }
        #expect(seconds.count == reference.count && reference.count == 1 + 12 + 2, "\(seconds)")
        for (line, expected) in zip(seconds, reference) where !expected.hasPrefix("call_seconds_sum") {
            #expect(line == expected)
        }
        // The sums of the same durations: exact as `Duration`s, to a double's precision as seconds.
        let sums = try [seconds, reference].map { lines in
            try #require(lines.first { $0.hasPrefix("call_seconds_sum") }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) })
        }
        let exact = Double(Self.durations.reduce(0, +)) / 1e9
        #expect(abs(sums[0] - exact) < 1e-9 * exact && abs(sums[1] - exact) < 1e-9 * exact, "\(sums) against \(exact)")
    }

    @Test("a destroyed timer leaves the exposition; other metrics pass through to swift-prometheus")
    func destroyAndPassThrough() {
        let registry = PrometheusCollectorRegistry()
        let factory = SecondsTimerFactory(registry: registry)
        let timer = factory.makeTimer(label: "gone_seconds", dimensions: [])
        timer.recordNanoseconds(1_000)
        factory.makeCounter(label: "kept_total", dimensions: [("k", "v")]).increment(by: 3)
        #expect(registry.emitToString().contains("gone_seconds_count 1"))
        factory.destroyTimer(timer)
        let text = registry.emitToString()
        #expect(!text.contains("gone_seconds"), "\(text)")
        #expect(text.contains(#"kept_total{k="v"} 3"#), "\(text)")
    }
}
