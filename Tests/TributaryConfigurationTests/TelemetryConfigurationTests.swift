import HTTPCore
import Testing
import TributaryConfiguration

@Suite("telemetry.otlp: the file's keys, overridden by the standard OTEL_* variables; off unless an endpoint is set")
struct TelemetryConfigurationTests {
    static let file = """
        upstreams:
          tasks: {url: "http://127.0.0.1:1"}
        """

    static func load(_ yaml: String = file, environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration.OTLPSettings {
        try Configuration.load(yaml: yaml, file: "t.yaml", environment: environment).telemetry.otlp
    }

    static func problem(_ yaml: String = file, environment: [String: String] = [:]) -> String? {
        do {
            _ = try load(yaml, environment: environment)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("without an endpoint nothing is exported; the defaults are OpenTelemetry's")
    func offByDefault() throws {
        let otlp = try Self.load()
        #expect(otlp.endpoint == nil)
        #expect(!otlp.exports(environment: [:]))
        #expect(otlp.`protocol` == "http/protobuf")
        #expect(otlp.serviceName == "tributary")
        #expect(otlp.sampler == "parentbased_always_on")
        #expect(otlp.metricsExporter == "none")
        // The traces-only endpoint, which the exporter reads itself, turns it on too.
        #expect(otlp.exports(environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"]))
        #expect(!otlp.exports(environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ""]))
    }

    @Test("the file's telemetry.otlp is read, and each OTEL_* variable beats its key")
    func fileThenEnvironment() throws {
        let yaml = Self.file + """

            telemetry:
              otlp:
                endpoint: http://collector:4318
                serviceName: from-file
                sampler: traceidratio
                samplerArgument: "0.25"
                resourceAttributes: deployment.environment.name=test
                metricsExporter: otlp
            """
        let fromFile = try Self.load(yaml)
        #expect(fromFile.endpoint == "http://collector:4318")
        #expect(fromFile.serviceName == "from-file")
        #expect(fromFile.sampler == "traceidratio")
        #expect(fromFile.samplerArgument == "0.25")
        #expect(fromFile.resourceAttributes == "deployment.environment.name=test")
        #expect(fromFile.metricsExporter == "otlp")
        let overridden = try Self.load(yaml, environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SERVICE_NAME": "from-env",
            "OTEL_TRACES_SAMPLER": "always_off", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cret", "OTEL_METRICS_EXPORTER": "none",
        ])
        #expect(overridden.endpoint == "http://127.0.0.1:4318")
        #expect(overridden.serviceName == "from-env")
        #expect(overridden.sampler == "always_off")
        #expect(overridden.headers == "api-key=s3cret")
        #expect(overridden.metricsExporter == "none")
        #expect(overridden.exports(environment: [:]))
    }

    @Test("a value that cannot work names its key or its variable", arguments: [
        ("telemetry: {otlp: {sampler: sometimes}}", [String: String](), "t.yaml: telemetry.otlp.sampler: expected one of"),
        ("telemetry: {otlp: {protocol: http/json}}", [:], "t.yaml: telemetry.otlp.protocol: expected one of grpc, http/protobuf"),
        ("telemetry: {otlp: {endpoint: http://c:4318, colour: blue}}", [:], "t.yaml: telemetry.otlp.colour"),
        ("telemetry: {tracing: {}}", [:], "t.yaml: telemetry.tracing"),
        ("", ["OTEL_TRACES_SAMPLER": "sometimes"], "OTEL_TRACES_SAMPLER: expected one of"),
        ("", ["OTEL_METRICS_EXPORTER": "statsd"], "OTEL_METRICS_EXPORTER: expected one of none, otlp, prometheus"),
    ])
    func refused(yaml: String, environment: [String: String], message: String) {
        let problem = Self.problem(Self.file + "\n" + yaml, environment: environment)
        #expect(problem?.hasPrefix(message) == true, "\(problem ?? "accepted")")
    }

    @Test("the span a tracer made becomes the context's own: its calls are that span's children")
    func ownSpan() throws {
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        let context = try #require(TraceContext(ownSpanOf: traceparent, tracestate: "congo=t61"))
        #expect(context.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(context.spanID == "00f067aa0ba902b7")
        #expect(context.ownParent == traceparent)
        #expect(context.state == "congo=t61")
        #expect(TraceContext(ownSpanOf: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", tracestate: nil) == nil)
    }
}
