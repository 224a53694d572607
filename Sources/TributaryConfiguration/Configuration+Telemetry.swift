/// `telemetry.otlp:` — traces (and, when asked, metrics) exported over OTLP/HTTP. Each key is
/// also the standard OpenTelemetry environment variable every SDK reads, which overrides the
/// file: a collector's address set the usual way reaches Tributary too. Off unless an
/// endpoint is set. Made once at start (a reload keeps it).
extension Configuration {
    public struct OTLPSettings: Sendable, Equatable {
        /// The collector's base URL (`http://collector:4318`); traces go to `/v1/traces` below it.
        public var endpoint: String?
        /// `http/protobuf`, the only protocol this build exports with (`grpc` is refused
        /// rather than silently not exported).
        public var `protocol` = "http/protobuf"
        /// `key=value,key2=value2`: headers of every export (an API key). Secrets: never logged.
        public var headers: String?
        public var serviceName = "tributary"
        /// `key=value,…`, as `OTEL_RESOURCE_ATTRIBUTES`.
        public var resourceAttributes: String?
        public var sampler = "parentbased_always_on"
        /// The ratio of the `traceidratio` samplers, `0` to `1`.
        public var samplerArgument: String?
        /// `otlp`: the metrics of `/metrics` are exported too; `none` (or `prometheus`): not.
        public var metricsExporter = "none"

        public init() {}

        /// Whether anything is exported: an endpoint is set (here or as
        /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, which the exporter reads itself).
        public func exports(environment: [String: String]) -> Bool {
            endpoint != nil || environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"].map { !$0.isEmpty } == true
        }
    }

    /// `telemetry:` — so far only its `otlp` section.
    public struct Telemetry: Sendable, Equatable {
        public var otlp = OTLPSettings()

        public init() {}
    }

    /// The file's `telemetry.otlp` into ``telemetry``.
    mutating func readTelemetry(_ root: YAMLSection) throws(ConfigurationError) {
        guard let section = try root.section("telemetry") else { return }
        try section.allowOnlyDeclared()
        guard let otlp = try section.section("otlp") else { return }
        try otlp.allowOnlyDeclared()
        try OTLPSettings.fields.read(otlp, into: &telemetry.otlp)
    }
}

extension Configuration.OTLPSettings: SettingsSection {
    static var defaults: Self { Self() }

    /// The samplers OpenTelemetry's SDKs know by name (`OTEL_TRACES_SAMPLER`).
    static let samplers: Set<String> = [
        "always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio",
    ]

    static let fields: [Field<Self>] = [
        Field("endpoint", \.endpoint, .optionalText, default: "none: nothing is exported", environment: "OTEL_EXPORTER_OTLP_ENDPOINT",
              "the OpenTelemetry collector's OTLP/HTTP base URL (`http://127.0.0.1:4318`): spans go to `/v1/traces` below it, batched, off the workers' loops (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` names the whole traces URL instead). See [operations.md](operations.md), \"Traces\""),
        Field("protocol", \.`protocol`, .oneOf(["http/protobuf", "grpc"]), environment: "OTEL_EXPORTER_OTLP_PROTOCOL",
              "`http/protobuf`; `grpc` is refused at start: this build exports over HTTP only"),
        Field("headers", \.headers, .optionalText, environment: "OTEL_EXPORTER_OTLP_HEADERS",
              "`key=value,…` sent with every export (a collector's API key). A secret: never logged; keep it out of the file"),
        Field("serviceName", \.serviceName, .nonEmptyText("expected a service name"), environment: "OTEL_SERVICE_NAME",
              "`service.name` of every span"),
        Field("resourceAttributes", \.resourceAttributes, .optionalText, environment: "OTEL_RESOURCE_ATTRIBUTES",
              "`key=value,…`: more resource attributes (`deployment.environment.name=prod`)"),
        Field("sampler", \.sampler, .oneOf(samplers), environment: "OTEL_TRACES_SAMPLER",
              "which traces are recorded: `parentbased_always_on` follows a caller's sampled flag and records the rest"),
        Field("samplerArgument", \.samplerArgument, .optionalText, environment: "OTEL_TRACES_SAMPLER_ARG",
              "the ratio of the `traceidratio` samplers, `0` to `1`"),
        Field("metricsExporter", \.metricsExporter, .oneOf(["none", "prometheus", "otlp"]), environment: "OTEL_METRICS_EXPORTER",
              "`otlp`: the metrics of `/metrics` are exported over OTLP too, every `OTEL_METRIC_EXPORT_INTERVAL` ms (60,000); `/metrics` is served either way"),
    ]
}
