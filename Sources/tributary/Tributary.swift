import ArgumentParser
import Glibc
import Logging
import TributaryServer
import TributaryConfiguration

/// `tributary`: serve aggregated upstream APIs as JSON and server-sent events.
struct Tributary: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Aggregates upstream REST APIs and serves them as JSON and server-sent events.",
        subcommands: [Serve.self, Demo.self, DemoUpstreamCommand.self, ProbeCommand.self],
        defaultSubcommand: Serve.self)
}

/// The options every serving command shares.
struct ServeOptions: ParsableArguments {
    @Option(help: "The configuration file (env TRIBUTARY_CONFIG; else config/tributary.yaml if there is one, else the built-in copy of it).")
    var config: String?

    // The options that set a setting: their help is its declaration's (TributaryServer's Settings).

    @Option(help: .setting("--listen"))
    var listen: String?

    @Option(name: .customLong("upstream"), help: .setting("--upstream"))
    var upstreams: [String] = []

    @Option(help: .setting("--redis"))
    var redis: String?

    @Option(help: .setting("--workers"))
    var workers: Int?

    @Option(help: .setting("--log-level"))
    var logLevel: String?

    @Option(help: .setting("--log-format"))
    var logFormat: String?

    /// The layered configuration, or exit status 1 with a message naming the bad key (not a
    /// usage error: the command line was fine, the settings were not). The file is the one
    /// `--config` or `TRIBUTARY_CONFIG` names (it must exist), else `config/tributary.yaml` in
    /// the working directory if there is one, else the copy of it built into the binary.
    func load(extraUpstreams: [String] = []) throws -> (configuration: Configuration, source: String) {
        do {
            return try reload(extraUpstreams: extraUpstreams)
        } catch let error as ConfigurationError {
            throw Self.invalidConfiguration(error)
        }
    }

    /// Says on standard error why the configuration cannot serve, naming its key; the exit
    /// status 1 to end with (not a usage error: the command line was fine, the settings were not).
    static func invalidConfiguration(_ problem: some Error) -> ExitCode {
        let message = Array("Error: invalid configuration: \(problem)\n".utf8)
        _ = message.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        return ExitCode.failure
    }

    /// The layered configuration read again from the same sources (SIGHUP): the file, the
    /// environment as it is now, the command line given at start. Throws a
    /// ``ConfigurationError`` that names the bad key, or a ``ValidationError`` when the file
    /// cannot be read.
    func reload(extraUpstreams: [String] = []) throws -> (configuration: Configuration, source: String) {
        let environment = Environment.variables
        let (yaml, source) = try Self.file(named: config ?? environment["TRIBUTARY_CONFIG"])
        let configuration = try Configuration.load(
            yaml: yaml, file: source, environment: environment,
            overrides: .init(
                listen: listen, workers: workers, logLevel: logLevel, logFormat: logFormat, upstreams: extraUpstreams + upstreams, redis: redis))
        return (configuration, source)
    }

    /// The configuration's text and what to call it: the file at `path`, or the default one.
    private static func file(named path: String?) throws -> (yaml: String, source: String) {
        let defaultPath = "config/tributary.yaml"
        do {
            return (try ConfigurationFile.read(path ?? defaultPath), path ?? defaultPath)
        } catch where path == nil && error.code == ENOENT {
            return (ShippedConfiguration.yaml, ShippedConfiguration.name)
        } catch {
            throw ValidationError("\(path ?? defaultPath): cannot read the configuration file (\(error))")
        }
    }
}

extension ArgumentHelp {
    /// The help of option `name`, which sets a setting: what its declaration says.
    static func setting(_ name: String) -> ArgumentHelp {
        let help = Configuration.help(option: name)
        return ArgumentHelp(help.text, valueName: help.valueName)
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the configured resources (the default command).")

    @OptionGroup var options: ServeOptions

    func run() throws {
        let (configuration, source) = try options.load()
        let logger = Logger.tributary(level: configuration.server.logLevel, format: configuration.server.logFormat)
        logger.info("configuration", metadata: ["source": "\(source)"])
        let export = try options.startExport(configuration, logger: logger)
        defer { export?.shutDown(within: .seconds(5)) }
        try Service.run(
            configuration: configuration, logger: logger, spans: export?.spans, reload: { [options] in try options.reload().configuration })
    }
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the configured resources from the built-in demo upstream (started in this process).")

    @OptionGroup var options: ServeOptions

    @Option(help: "HOST:PORT for the demo upstream (0 picks a free port).")
    var demoListen = "127.0.0.1:0"

    @Option(help: "Delay the demo's third group's details this long (e.g. 2s): the live page shows it filling in.")
    var slowDetail = "0s"

    func run() throws {
        guard let address = ListenAddress(demoListen) else { throw ValidationError("--demo-listen: expected HOST:PORT") }
        guard let delay = DemoUpstream.delay(slowDetail) else { throw ValidationError("--slow-detail: expected a duration such as 2s or 500ms") }
        var (configuration, source) = try options.load()
        let logger = Logger.tributary(level: configuration.server.logLevel, format: configuration.server.logFormat)
        logger.info("configuration", metadata: ["source": "\(source)"])
        // Before the demo upstream makes any metric: exported metrics are bootstrapped first.
        let export = try options.startExport(configuration, logger: logger)
        defer { export?.shutDown(within: .seconds(5)) }
        let port = try Service.startDemoUpstream(on: address, slowDetail: delay, logger: logger)
        let demoURL = "http://\(ListenAddress(host: address.host, port: port))"
        let demoUpstreams = configuration.upstreams.keys.sorted().map { "\($0)=\(demoURL)" }
        configuration = try options.load(extraUpstreams: demoUpstreams).configuration
        let reload = { [options] in try options.reload(extraUpstreams: demoUpstreams).configuration }
        try Service.run(configuration: configuration, logger: logger, spans: export?.spans, reload: reload) { port in
            let base = "http://\(ListenAddress(host: Self.browsable(configuration.server.listen.host), port: port))"
            let resource = configuration.resources.keys.sorted().first.map { "/" + $0 } ?? "/healthz"
            logger.notice("open \(base)/ in a browser (the live page), or try: curl \(base)\(resource)")
        }
    }
}

extension Demo {
    /// A host a browser on this machine can open: the loopback address when the service
    /// listens on every address.
    static func browsable(_ host: String) -> String {
        switch host {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        default: host
        }
    }
}

struct DemoUpstreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-upstream", abstract: "Run only the demo upstream (tasks, media and search APIs).")

    @Option(help: "HOST:PORT to listen on.")
    var listen = "127.0.0.1:8081"

    @Option(help: "Delay the third group's details this long (e.g. 2s).")
    var slowDetail = "0s"

    func run() throws {
        guard let address = ListenAddress(listen) else { throw ValidationError("--listen: expected HOST:PORT") }
        guard let delay = DemoUpstream.delay(slowDetail) else { throw ValidationError("--slow-detail: expected a duration such as 2s or 500ms") }
        try Service.runDemoUpstream(on: address, slowDetail: delay, logger: .tributary(level: "info"))
    }
}

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe", abstract: "GET a URL and exit 0 on a 2xx answer (a HEALTHCHECK without curl).")

    @Argument(help: "The URL, e.g. http://127.0.0.1:8080/healthz")
    var url: String

    func run() throws {
        do {
            _ = try Probe.get(url)
        } catch {
            throw ValidationError("\(error)")
        }
    }
}
