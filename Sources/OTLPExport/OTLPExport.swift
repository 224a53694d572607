public import CoreMetrics
public import Logging
public import Telemetry
#if OTLP
import Dispatch
import HTTPCore
import OTel
import ServiceLifecycle
import Synchronization
import Tracing
#endif

/// Exporting over OTLP/HTTP, with swift-otel: its tracer (W3C trace context, the sampler
/// `OTEL_TRACES_SAMPLER` names, a batch span processor with a bounded queue) and its OTLP/HTTP
/// exporter, and, with `OTEL_METRICS_EXPORTER=otlp`, its metrics exporter beside `/metrics`.
///
/// ```
/// worker loops ── span.end() ──▶ swift-otel's batch processor (bounded: OTEL_BSP_MAX_QUEUE_SIZE, 2,048)
///                  (a yield,      └─ every OTEL_BSP_SCHEDULE_DELAY (5 s) or when full ──▶ POST /v1/traces
///                   never a wait)     on Swift's concurrency pool, never on a worker's loop
/// ```
///
/// A collector that is slow or down costs the spans that do not fit: the processor drops
/// them, and those of an export that failed are lost too. Both are counted in
/// `tributary_otlp_dropped_spans_total`, read from what swift-otel tells its diagnostic
/// logger (it offers no counter of its own), and its warnings reach the service's log.
///
/// Built without the package's `OTLP` trait (the test builds), it exports nothing and says
/// so at start when an endpoint is set.
public final class OTLPExport: Sendable {
    /// What `telemetry.otlp` and the `OTEL_*` variables said (the configuration has read both).
    public struct Settings: Sendable {
        /// The collector's base URL; nil, with `tracesEndpoint` nil too: nothing is exported.
        public var endpoint: String?
        /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: the whole URL spans are posted to.
        public var tracesEndpoint: String?
        public var transport: String
        /// `key=value,…` (a secret: never logged).
        public var headers: String?
        public var serviceName: String
        public var resourceAttributes: String?
        public var sampler: String
        public var samplerArgument: String?
        public var exportsMetrics: Bool

        public init(
            endpoint: String?, tracesEndpoint: String?, transport: String, headers: String?, serviceName: String,
            resourceAttributes: String?, sampler: String, samplerArgument: String?, exportsMetrics: Bool
        ) {
            self.endpoint = endpoint
            self.tracesEndpoint = tracesEndpoint
            self.transport = transport
            self.headers = headers
            self.serviceName = serviceName
            self.resourceAttributes = resourceAttributes
            self.sampler = sampler
            self.samplerArgument = samplerArgument
            self.exportsMetrics = exportsMetrics
        }

        /// Whether there is anywhere to export to.
        public var isOn: Bool { endpoint != nil || tracesEndpoint != nil }
    }

    /// Why exporting cannot start, in words for the start-up error.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// Where the service records its spans.
    public let spans: Spans
    /// swift-otel's metrics factory, when metrics are exported too: swift-metrics must be
    /// bootstrapped with it (beside the Prometheus one) before any metric is made.
    public let metricsFactory: (any MetricsFactory)?
    #if OTLP
    private let services: ServiceGroup
    private let stopped = Mutex<Task<Void, Never>?>(nil)
    #endif

    /// The exporter `settings` describe, not yet running (``run(logger:)``); nil when they
    /// set no endpoint. Throws a ``Problem`` naming the setting that cannot work.
    public static func make(_ settings: Settings, logger: Logger) throws(Problem) -> OTLPExport? {
        guard settings.isOn else { return nil }
        #if OTLP
        return try OTLPExport(settings, logger: logger)
        #else
        logger.warning("telemetry.otlp: this build has no OTLP exporter (built without the OTLP trait): nothing is exported")
        return nil
        #endif
    }

    #if OTLP
    private init(_ settings: Settings, logger: Logger) throws(Problem) {
        guard settings.transport == "http/protobuf" else {
            throw Problem(description: "telemetry.otlp.protocol (OTEL_EXPORTER_OTLP_PROTOCOL): \(settings.transport) is not exported by this build; use http/protobuf")
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = settings.serviceName
        configuration.resourceAttributes = Self.pairs(settings.resourceAttributes ?? "")
        configuration.propagators = [.traceContext]
        configuration.diagnosticLogger = .custom(Logger(label: "otel") { _ in Diagnostics(forwardingTo: logger) })
        configuration.diagnosticLogLevel = .warning
        configuration.logs.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.sampler = try Self.sampler(settings.sampler, argument: settings.samplerArgument)
        var exporter = configuration.traces.otlpExporter
        exporter.protocol = .httpProtobuf
        exporter.headers = Self.pairs(settings.headers ?? "").map { ($0.key, $0.value) }
        // swift-otel takes an endpoint set in code as the signal's whole URL, and the
        // environment's OTEL_EXPORTER_OTLP_ENDPOINT (which it reads again) as a base.
        if let endpoint = settings.endpoint { exporter.endpoint = Self.url(of: "traces", below: endpoint) }
        configuration.traces.otlpExporter = exporter
        configuration.metrics.enabled = settings.exportsMetrics
        if settings.exportsMetrics {
            configuration.metrics.exporter = .otlp
            var metricsExporter = exporter
            if let endpoint = settings.endpoint { metricsExporter.endpoint = Self.url(of: "metrics", below: endpoint) }
            configuration.metrics.otlpExporter = metricsExporter
        }
        do {
            let tracing = try OTel.makeTracingBackend(configuration: configuration)
            var services: [any Service] = [tracing.service]
            if settings.exportsMetrics {
                let metrics = try OTel.makeMetricsBackend(configuration: configuration)
                metricsFactory = metrics.factory
                services.append(metrics.service)
            } else {
                metricsFactory = nil
            }
            spans = Spans(tracer: tracing.factory)
            self.services = ServiceGroup(services: services, gracefulShutdownSignals: [], logger: logger)
        } catch {
            throw Problem(description: "telemetry.otlp: \(error)")
        }
    }

    /// Starts exporting, on Swift's concurrency pool: the workers' loops only hand spans over.
    public func run() {
        _ = Diagnostics.dropped
        let services = services
        stopped.withLock { $0 = Task.detached { try? await services.run() } }
    }

    /// Sends what is queued and stops, waiting at most `limit` for the collector.
    public func shutDown(within limit: Duration) {
        guard let task = stopped.withLock({ $0 }) else { return }
        let done = DispatchSemaphore(value: 0)
        let services = services
        Task.detached {
            await services.triggerGracefulShutdown()
            await task.value
            done.signal()
        }
        let (seconds, attoseconds) = limit.components
        _ = done.wait(timeout: .now() + .nanoseconds(Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)))
    }

    /// Where `signal` (`traces`, `metrics`) is posted below a collector's base URL, as OTLP/HTTP
    /// has it: `/v1/<signal>`.
    private static func url(of signal: String, below endpoint: String) -> String {
        endpoint.hasSuffix("/") ? "\(endpoint)v1/\(signal)" : "\(endpoint)/v1/\(signal)"
    }

    /// `key=value,key2=value2`, as the `OTEL_*` variables write them (values percent-decoded).
    static func pairs(_ text: String) -> [String: String] {
        var pairs: [String: String] = [:]
        for item in text.split(separator: ",") {
            guard let equals = item.firstIndex(of: "=") else { continue }
            let key = trimmed(item[..<equals])
            let value = trimmed(item[item.index(after: equals)...])
            guard !key.isEmpty else { continue }
            pairs[key] = QueryString.percentDecoded(value) ?? value
        }
        return pairs
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }

    private static func sampler(_ name: String, argument: String?) throws(Problem) -> OTel.Configuration.TracesConfiguration.SamplerConfiguration {
        let ratio = argument.flatMap(Double.init) ?? 1
        let sampler: OTel.Configuration.TracesConfiguration.SamplerConfiguration? = switch name {
        case "always_on": .alwaysOn
        case "always_off": .alwaysOff
        case "traceidratio": .traceIDRatio(ratio: ratio)
        case "parentbased_always_off": .parentBasedAlwaysOff
        case "parentbased_traceidratio": .parentBasedTraceIDRatio(ratio: ratio)
        default: .parentBasedAlwaysOn
        }
        guard let sampler else {
            throw Problem(description: "telemetry.otlp.samplerArgument (OTEL_TRACES_SAMPLER_ARG): expected a ratio from 0 to 1, found \(argument ?? "")")
        }
        return sampler
    }
    #else
    private init?() { return nil }

    public func run() {}
    public func shutDown(within limit: Duration) {}
    #endif
}
