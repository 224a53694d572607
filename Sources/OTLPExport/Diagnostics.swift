#if OTLP
import CoreMetrics
import Logging

/// swift-otel's diagnostic logger: what it says at `warning` and above goes to the service's
/// log (`source=otel`), and the spans its messages say were lost are counted in
/// `tributary_otlp_dropped_spans_total`. swift-otel keeps no counter of its own: its batch
/// span processor logs "Spans were dropped this iteration because queue was full" with
/// `dropped_count` when its bounded queue was full, and "Failed to export batch." with the
/// batch's `batch_size` when the collector did not take a batch (down, slow past
/// `OTEL_BSP_EXPORT_TIMEOUT`, or refusing it). Tests/Clients/otlp_traces.py holds these messages to
/// swift-otel's wording with a collector that is down and one that is slow.
struct Diagnostics: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .warning
    private let forward: Logger

    /// Made on first use, after swift-metrics was bootstrapped (``OTLPExport/run()`` makes it,
    /// so `/metrics` shows it from the start).
    static let dropped = Counter(label: "tributary_otlp_dropped_spans_total")

    init(forwardingTo logger: Logger) {
        forward = logger
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        let message = event.message.description
        if message.hasPrefix("Spans were dropped"), let count = Self.number(all["dropped_count"]) {
            Self.dropped.increment(by: count)
        } else if message.hasPrefix("Failed to export batch"), let count = Self.number(all["batch_size"]) {
            Self.dropped.increment(by: count)
        }
        forward.log(level: event.level, "otlp: \(message)", metadata: ["source": "otel"], source: "otel")
    }

    private static func number(_ value: Logger.Metadata.Value?) -> Int? {
        guard case .string(let text)? = value else {
            if case .stringConvertible(let convertible)? = value { return Int(convertible.description) }
            return nil
        }
        return Int(text)
    }
}
#endif
