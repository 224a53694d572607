public import Prometheus
public import Metrics
import Synchronization

/// The process's metrics registry: swift-metrics is bootstrapped with a Prometheus factory
/// writing into it the first time it is used (before any metric handle is made), and
/// `GET /metrics` renders it in the Prometheus text format.
public enum MetricsExport {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        // swift-prometheus's factory, with timers that record seconds as `Double`s.
        let prometheus = SecondsTimerFactory(registry: registry)
        if let other = alsoTo.withLock({ $0 }) {
            MetricsSystem.bootstrap(MultiplexMetricsHandler(factories: [prometheus, other]))
        } else {
            MetricsSystem.bootstrap(prometheus)
        }
        return registry
    }()

    private static let alsoTo = Mutex<(any MetricsFactory)?>(nil)

    /// Every metric goes to `factory` too (OTLP, `OTEL_METRICS_EXPORTER=otlp`): the same
    /// instruments as `/metrics`. Only before anything made a metric (the start of `serve`).
    public static func exportAlso(to factory: any MetricsFactory) {
        alsoTo.withLock { $0 = factory }
        _ = registry
    }
}
