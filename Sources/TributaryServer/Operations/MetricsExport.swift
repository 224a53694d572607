public import Prometheus
import Metrics

/// The process's metrics registry: swift-metrics is bootstrapped with a Prometheus factory
/// writing into it the first time it is used (before any metric handle is made), and
/// `GET /metrics` renders it in the Prometheus text format.
public enum MetricsExport {
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        // swift-prometheus's factory, with timers that record seconds as `Double`s.
        MetricsSystem.bootstrap(SecondsTimerFactory(registry: registry))
        return registry
    }()
}
