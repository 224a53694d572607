public import CoreMetrics
public import Prometheus

/// swift-prometheus's metrics factory, except for timers: a `Timer` records into a histogram
/// of seconds held as `Double`s, with the bounds swift-prometheus gives a timer's histogram of
/// `Duration`s (5 ms to 10 s).
///
/// Why: a `/groups` request records one latency per upstream call, and the `Duration`
/// histogram compares each bound through a call into the standard library (`Duration.<`),
/// in every observation; the `Double` one compares in line. The exposition is
/// swift-prometheus's either way, line for line: the same `le` labels and a sum in seconds.
public struct SecondsTimerFactory: MetricsFactory {
    public let registry: PrometheusCollectorRegistry
    private let prometheus: PrometheusMetricsFactory
    private let bounds: [Double]

    public init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
        prometheus = PrometheusMetricsFactory(registry: registry)
        bounds = prometheus.defaultDurationHistogramBuckets.map(Self.seconds)
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let name = MetricNameDescriptor(metricName: label, unitName: "", helpText: "")
        return SecondsTimer(histogram: registry.makeValueHistogram(descriptor: name, labels: dimensions, buckets: bounds))
    }

    public func destroyTimer(_ handler: any TimerHandler) {
        guard let timer = handler as? SecondsTimer else { return }
        registry.unregisterValueHistogram(timer.histogram)
    }

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        prometheus.makeCounter(label: label, dimensions: dimensions)
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        prometheus.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        prometheus.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        prometheus.makeMeter(label: label, dimensions: dimensions)
    }

    public func destroyCounter(_ handler: any CounterHandler) { prometheus.destroyCounter(handler) }
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { prometheus.destroyFloatingPointCounter(handler) }
    public func destroyRecorder(_ handler: any RecorderHandler) { prometheus.destroyRecorder(handler) }
    public func destroyMeter(_ handler: any MeterHandler) { prometheus.destroyMeter(handler) }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A timer that records into a histogram of seconds (``SecondsTimerFactory``).
final class SecondsTimer: TimerHandler {
    let histogram: ValueHistogram

    init(histogram: ValueHistogram) {
        self.histogram = histogram
    }

    func recordNanoseconds(_ duration: Int64) {
        histogram.record(Double(duration) / 1_000_000_000)
    }
}
