import Foundation
import UpstreamClient
import Redis
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting
import Yams

/// The deployment files of `deploy/` hold together: no Docker engine runs on the project's
/// machines, so what `docker compose up` would find wrong is checked here, piece by piece,
/// against the real things: the compose file read as YAML, each replica's environment loaded
/// by the service's own configuration code on top of the shipped configuration (as the
/// image does), the nginx template rendered with the compose file's values and judged by
/// nginx itself (`nginx -t`). ``FleetThroughNginxTests`` runs the same template in front of
/// real replicas.
@Suite("Deployment files: deploy/compose.yaml and the nginx template")
struct DeployFilesTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let deploy = repository.appendingPathComponent("deploy")

    /// `deploy/compose.yaml` as Compose reads it (YAML merge keys resolved).
    static func compose() throws -> [String: Any] {
        let text = try String(contentsOf: deploy.appendingPathComponent("compose.yaml"), encoding: .utf8)
        return try #require(try Yams.load(yaml: text) as? [String: Any])
    }

    static func services() throws -> [String: [String: Any]] {
        try #require(try compose()["services"] as? [String: [String: Any]])
    }

    /// A service's `environment`, as a map (Compose also allows a list of `NAME=value`), each
    /// `${NAME:-default}` interpolated as Compose does with nothing set in the shell.
    static func environment(_ service: [String: Any]) -> [String: String] {
        if let map = service["environment"] as? [String: Any] { return map.mapValues { interpolated("\($0)") } }
        var environment: [String: String] = [:]
        for entry in service["environment"] as? [String] ?? [] {
            let parts = entry.split(separator: "=", maxSplits: 1)
            environment[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return environment
    }

    /// `value` with each `${NAME:-default}` replaced by its default.
    static func interpolated(_ value: String) -> String {
        value.replacing(/\$\{[A-Z_]+:-([^}]*)\}/) { String($0.1) }
    }

    /// The `ENV` lines of the Dockerfile's runtime stage: the replicas' environment under Compose's.
    static func imageEnvironment() throws -> [String: String] {
        let dockerfile = try String(contentsOf: repository.appendingPathComponent("Dockerfile"), encoding: .utf8)
        let runtime = try #require(dockerfile.range(of: "AS runtime")).upperBound
        var environment: [String: String] = [:]
        for line in dockerfile[runtime...].split(separator: "\n") where line.hasPrefix("ENV ") {
            let parts = line.dropFirst(4).split(separator: "=", maxSplits: 1)
            environment[String(parts[0])] = String(parts[1])
        }
        return environment
    }

    static var replicaNames: [String] { get throws { try services().keys.filter { $0.hasPrefix("tributary-") }.sorted() } }

    @Test("three replicas of the repository's image, each loading its environment into a fleet member of the one Redis")
    func replicas() throws {
        let services = try Self.services()
        let names = try Self.replicaNames
        #expect(names.count >= 2, "nginx balances two replicas or more")
        #expect(names.count == 3)
        let imageEnvironment = try Self.imageEnvironment()
        for name in names {
            let replica = try #require(services[name])
            let build = try #require(replica["build"] as? [String: Any], "\(name) is built from the repository")
            let context = Self.deploy.appendingPathComponent(try #require(build["context"] as? String)).standardizedFileURL
            #expect(context.path == Self.repository.standardizedFileURL.path)
            #expect(FileManager.default.fileExists(atPath: context.appendingPathComponent(build["dockerfile"] as? String ?? "Dockerfile").path))

            // The image's configuration file, its ENV, then Compose's environment: what `serve` loads.
            let environment = imageEnvironment.merging(Self.environment(replica)) { $1 }
            let configuration = try Configuration.load(yaml: ConfigurationTests.shipped, file: "/etc/tributary/tributary.yaml", environment: environment)
            let cluster = try #require(configuration.cluster, "\(name) joins a fleet (TRIBUTARY_REDIS_URL, TRIBUTARY_CLUSTER_SECRET)")
            #expect(services[cluster.redis.host] != nil, "\(name)'s Redis \(cluster.redis) is a service of the file")
            #expect(cluster.redis.port == RedisEndpoint.defaultPort)
            #expect(configuration.server.listen.host == "0.0.0.0")
            for (upstream, settings) in configuration.upstreams {
                #expect(services[settings.url.origin.host] != nil, "\(name)'s upstream \(upstream) is \(settings.url), a service of the file")
            }
            let dependencies = try #require(replica["depends_on"] as? [String: Any])
            #expect(dependencies["redis"] != nil)
            // Clients come through nginx: its address alone is trusted to name them.
            let networks = try #require(services["nginx"]?["networks"] as? [String: Any])
            let nginx = try #require((networks["default"] as? [String: Any])?["ipv4_address"] as? String)
            #expect(configuration.server.trustedProxies.map(\.description) == ["\(nginx)/32"], "\(name)")
            let subnets = (((try Self.compose()["networks"] as? [String: Any])?["default"] as? [String: Any])?["ipam"] as? [String: Any])?["config"] as? [[String: Any]]
            #expect(subnets?.compactMap { ($0["subnet"] as? String).flatMap(AddressRange.init) }.contains { $0.contains(nginx) } == true)
        }
    }

    @Test("the demo upstream listens where the replicas look for it, and Redis is the Debian-based image with its health check")
    func supportingServices() throws {
        let services = try Self.services()
        let demo = try #require(services["demo-upstream"])
        let command = try #require(demo["command"] as? [String])
        #expect(command.first == "demo-upstream")
        let listen = try #require(command.firstIndex(of: "--listen").map { command[$0 + 1] })
        let replica = try #require(services[try Self.replicaNames[0]])
        for (variable, url) in Self.environment(replica) where variable.hasPrefix("TRIBUTARY_UPSTREAM_") {
            #expect(try BaseURL(url).origin.port == ListenAddress(listen)?.port, "\(variable)")
        }
        let redis = try #require(services["redis"])
        #expect((redis["image"] as? String)?.hasPrefix("redis:") == true)
        #expect(redis["healthcheck"] != nil, "replicas wait for a healthy Redis")
    }

    @Test("every replica is healthy once ready: its health check asks /readyz on the port it listens on, and nginx waits for it")
    func replicasReady() throws {
        let services = try Self.services()
        let listen = try #require(try Self.imageEnvironment()["TRIBUTARY_LISTEN"])
        let port = try #require(ListenAddress(listen)?.port)
        let waitedFor = try #require((services["nginx"]?["depends_on"] as? [String: [String: String]])?.filter { $0.value["condition"] == "service_healthy" })
        for name in try Self.replicaNames {
            let check = try #require((services[name]?["healthcheck"] as? [String: Any])?["test"] as? [String], "\(name)")
            #expect(check == ["CMD", "tributary", "probe", "http://127.0.0.1:\(port)/readyz"], "\(name)")
            #expect(waitedFor[name] != nil, "nginx waits for \(name)")
        }
    }

    @Test("nginx mounts the template where the official image renders it, with exactly the variables it uses, every replica in the upstream")
    func nginxService() throws {
        let services = try Self.services()
        let nginx = try #require(services["nginx"])
        let volumes = try #require(nginx["volumes"] as? [String])
        let mount = try #require(volumes.first { $0.contains("/etc/nginx/templates/") })
        let parts = mount.split(separator: ":")
        let source = Self.deploy.appendingPathComponent(String(parts[0])).standardizedFileURL
        #expect(source.path == NginxProcess.deployTemplate.standardizedFileURL.path, "the compose file mounts the template the tests run")
        #expect(parts[1].hasSuffix(".conf.template"), "the image renders only *.template files, into conf.d/*.conf")

        let template = try String(contentsOf: source, encoding: .utf8)
        let environment = Self.environment(nginx)
        #expect(Set(NginxProcess.placeholders(in: template)) == Set(environment.keys))
        _ = try NginxProcess.render(template, with: environment)

        // Every replica, on the port the image listens on.
        let port = try #require(ListenAddress(try Self.imageEnvironment()["TRIBUTARY_LISTEN"] ?? "")).port
        let servers = try #require(environment["NGINX_TRIBUTARY_SERVERS"])
        let named = servers.matches(of: /server ([a-z0-9-]+):(\d+);/).map { "\($0.1):\($0.2)" }
        #expect(Set(named) == Set(try Self.replicaNames.map { "\($0):\(port)" }))
        let dependencies = try #require(nginx["depends_on"] as? [String: Any])
        #expect(Set(dependencies.keys) == Set(try Self.replicaNames), "nginx resolves the replicas' names at start: they must exist by then")
    }

    @Test("the template rendered with the compose file's servers (on loopback) passes nginx -t")
    func nginxAcceptsTheTemplate() async throws {
        let nginx = try #require(try Self.services()["nginx"])
        let template = try String(contentsOf: NginxProcess.deployTemplate, encoding: .utf8)
        var variables = Self.environment(nginx)
        // The replicas' names resolve only inside Compose's network; nginx -t resolves them.
        variables["NGINX_TRIBUTARY_SERVERS"] = variables["NGINX_TRIBUTARY_SERVERS"]?.replacing(/tributary-\d+/) { _ in "127.0.0.1" }
        variables["NGINX_LISTEN"] = "127.0.0.1:\(try LoopbackPort.free())"
        let directory = try NginxProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try NginxProcess.render(template, with: variables).write(toFile: directory + "/tributary.conf", atomically: true, encoding: .utf8)
        try NginxProcess.mainConfiguration(directory: directory, including: directory + "/tributary.conf")
            .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let verdict = await NginxProcess.check(configuration: directory + "/nginx.conf", prefix: directory)
        #expect(verdict.passed, "\(verdict.output)")
        #expect(verdict.output.contains("test is successful"))
    }

    @Test("the shipped configuration's commented cluster example loads once uncommented, and as shipped it runs alone")
    func shippedClusterExample() throws {
        #expect(try Configuration.load(yaml: ConfigurationTests.shipped, file: "config/tributary.yaml").cluster == nil)
        // The block from `# cluster:` through its indented lines, without the `# `.
        var lines = ConfigurationTests.shipped.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var index = try #require(lines.firstIndex(of: "# cluster:"))
        repeat {
            lines[index] = String(lines[index].dropFirst(2))
            index += 1
        } while lines[index].hasPrefix("#   ")
        let uncommented = lines.joined(separator: "\n")
        let secret = ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret]
        let cluster = try #require(try Configuration.load(yaml: uncommented, file: "config/tributary.yaml", environment: secret).cluster)
        #expect(cluster.redis == (try RedisEndpoint("redis://127.0.0.1:6379")))
        #expect(cluster.leaseTTL == .seconds(3))
        #expect(cluster.keyPrefix == "tributary")
    }

    @Test("the template keeps event streams flowing: no buffering, a long read timeout, HTTP/1.1 keep-alive to the replicas, the client's address passed on")
    func streamSafeSettings() throws {
        let template = try String(contentsOf: NginxProcess.deployTemplate, encoding: .utf8)
        let directives = template.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") }
        for required in [
            "proxy_buffering off;", "proxy_cache off;", "gzip off;", "proxy_http_version 1.1;", #"proxy_set_header Connection "";"#,
            "proxy_set_header Host $host;", "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
        ] {
            #expect(directives.contains(required), "\(required)")
        }
        let keepalive = try #require(directives.first { $0.hasPrefix("keepalive ") })
        #expect(Int(keepalive.dropFirst("keepalive ".count).dropLast()) ?? 0 >= 8, "an upstream keep-alive pool: \(keepalive)")
        let readTimeout = try #require(directives.first { $0.hasPrefix("proxy_read_timeout ") })
        let value = readTimeout.dropFirst("proxy_read_timeout ".count).dropLast()
        let seconds = value.hasSuffix("h") ? (Int(value.dropLast()) ?? 0) * 3600 : value.hasSuffix("m") ? (Int(value.dropLast()) ?? 0) * 60 : Int(value.filter(\.isNumber)) ?? 0
        #expect(seconds >= 3600, "a stream may be quiet for a long time: \(readTimeout)")
        #expect(!directives.contains { $0.contains("proxy_ignore_headers") && $0.contains("X-Accel-Buffering") }, "the service's X-Accel-Buffering: no is honoured")
        #expect(!directives.contains { $0.hasPrefix("proxy_next_upstream") && $0.contains("non_idempotent") }, "a trigger (POST) is never sent twice")
    }
}
