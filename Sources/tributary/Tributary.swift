import ArgumentParser
import Glibc
import Libevent
import Logging
import TributaryServer

/// `tributary`: serve aggregated upstream APIs as JSON and server-sent events.
struct Tributary: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Aggregates upstream REST APIs and serves them as JSON and server-sent events.",
        subcommands: [Serve.self, Demo.self, DemoUpstreamCommand.self, ProbeCommand.self],
        defaultSubcommand: Serve.self)
}

/// The options every serving command shares.
struct ServeOptions: ParsableArguments {
    @Option(help: "The configuration file (env TRIBUTARY_CONFIG).")
    var config: String?

    @Option(help: "HOST:PORT to listen on (env TRIBUTARY_LISTEN; config server.listen).")
    var listen: String?

    @Option(name: .customLong("upstream"), help: ArgumentHelp(
        "Override an upstream's base URL, repeatable (env TRIBUTARY_UPSTREAM_<NAME>).", valueName: "NAME=URL"))
    var upstreams: [String] = []

    @Option(help: "Join a fleet of replicas through this Redis, redis://HOST:PORT[/DB] (env TRIBUTARY_REDIS_URL; config cluster.redis).")
    var redis: String?

    @Option(help: "Event loops, one thread each (env TRIBUTARY_WORKERS; config server.workers).")
    var workers: Int?

    @Option(help: "trace, debug, info, notice, warning, error or critical (env TRIBUTARY_LOG_LEVEL).")
    var logLevel: String?

    /// The layered configuration, or exit with a message naming the bad key.
    func load(extraUpstreams: [String] = []) throws -> Configuration {
        let environment = Environment.variables
        let path = config ?? environment["TRIBUTARY_CONFIG"] ?? "config/tributary.yaml"
        let yaml: String
        do {
            yaml = try ConfigurationFile.read(path)
        } catch {
            throw ValidationError("\(path): cannot read the configuration file (\(error))")
        }
        do {
            return try Configuration.load(
                yaml: yaml, file: path, environment: environment,
                overrides: .init(listen: listen, workers: workers, logLevel: logLevel, upstreams: extraUpstreams + upstreams, redis: redis))
        } catch {
            throw ValidationError("invalid configuration: \(error)")
        }
    }
}

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the configured resources (the default command).")

    @OptionGroup var options: ServeOptions

    func run() throws {
        let configuration = try options.load()
        try Service.run(configuration: configuration, logger: .tributary(level: configuration.server.logLevel))
    }
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the configured resources from the built-in demo upstream (started in this process).")

    @OptionGroup var options: ServeOptions

    @Option(help: "HOST:PORT for the demo upstream (0 picks a free port).")
    var demoListen = "127.0.0.1:0"

    func run() throws {
        guard let address = ListenAddress(demoListen) else { throw ValidationError("--demo-listen: expected HOST:PORT") }
        var configuration = try options.load()
        let logger = Logger.tributary(level: configuration.server.logLevel)
        let port = try Service.startDemoUpstream(on: address, logger: logger)
        let demoURL = "http://\(address.host):\(port)"
        configuration = try options.load(extraUpstreams: configuration.upstreams.keys.sorted().map { "\($0)=\(demoURL)" })
        try Service.run(configuration: configuration, logger: logger) { port in
            logger.notice("try: curl http://\(configuration.server.listen.host):\(port)/groups")
        }
    }
}

struct DemoUpstreamCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-upstream", abstract: "Run only the demo upstream (tasks, media and search APIs).")

    @Option(help: "HOST:PORT to listen on.")
    var listen = "127.0.0.1:8081"

    func run() throws {
        guard let address = ListenAddress(listen) else { throw ValidationError("--listen: expected HOST:PORT") }
        try Service.runDemoUpstream(on: address, logger: .tributary(level: "info"))
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
