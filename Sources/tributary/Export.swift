import ArgumentParser
import Logging
import OTLPExport
import TributaryServer
import TributaryConfiguration

extension ServeOptions {
    /// Starts exporting over OTLP as `telemetry.otlp` and the `OTEL_*` variables say (nil:
    /// no endpoint, nothing exported), before anything makes a metric: with
    /// `OTEL_METRICS_EXPORTER=otlp`, swift-metrics is bootstrapped to export too. A setting that
    /// cannot work ends the start with exit status 1, as a bad configuration does.
    func startExport(_ configuration: Configuration, logger: Logger) throws -> OTLPExport? {
        let otlp = configuration.telemetry.otlp
        let settings = OTLPExport.Settings(
            endpoint: otlp.endpoint, tracesEndpoint: Environment.variables["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].flatMap { $0.isEmpty ? nil : $0 },
            transport: otlp.`protocol`, headers: otlp.headers, serviceName: otlp.serviceName,
            resourceAttributes: otlp.resourceAttributes, sampler: otlp.sampler, samplerArgument: otlp.samplerArgument,
            exportsMetrics: otlp.metricsExporter == "otlp")
        do {
            guard let export = try OTLPExport.make(settings, logger: logger) else { return nil }
            // swift-metrics is bootstrapped before the exporter makes its counter of dropped spans.
            if let factory = export.metricsFactory { MetricsExport.exportAlso(to: factory) } else { _ = MetricsExport.registry }
            export.run()
            logger.info("exporting spans over OTLP/HTTP", metadata: ["metrics": "\(settings.exportsMetrics)"])
            return export
        } catch {
            throw Self.invalidConfiguration(error)
        }
    }
}
