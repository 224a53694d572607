import Aggregation
import Foundation
import Glibc
import UpstreamClient
import Redis
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("Configuration")
struct ConfigurationTests {
    static let shipped: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return try! String(contentsOf: root.appendingPathComponent("config/tributary.yaml"), encoding: .utf8)
    }()

    private func problem(_ yaml: String, environment: [String: String] = [:], overrides: Configuration.Overrides = .init()) -> String? {
        do {
            _ = try Configuration.load(yaml: yaml, file: "t.yaml", environment: environment, overrides: overrides)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("the shipped configuration declares the contract's three upstreams, one that forwards Authorization, and the groups resource")
    func shippedConfiguration() throws {
        let configuration = try Configuration.load(yaml: Self.shipped, file: "config/tributary.yaml")
        #expect(Set(configuration.upstreams.keys) == ["tasks", "media", "search", "accounts"])
        #expect(configuration.upstreams["accounts"]?.forward == ["Authorization"])
        #expect(configuration.server.listen == ListenAddress(host: "127.0.0.1", port: 8080))
        #expect(configuration.server.workers == ProcessInfo.processInfo.activeProcessorCount, "workers: auto")
        guard case .list(let groups) = configuration.resources["groups"] else {
            Issue.record("no groups resource")
            return
        }
        #expect(groups.upstream == "tasks")
        #expect(groups.definition.detailPath?.description == "/groups/{id}/metadata")
    }

    @Test("upstreams on one origin share its pools, sized (for the whole process, whatever the workers) and queued by the largest of their values in any order")
    func poolPerOrigin() throws {
        for (tasks, media) in [(8, 20), (20, 8)] {
            let configuration = try Configuration.load(yaml: """
                server: {workers: 2}
                upstreams:
                  tasks: {url: "http://127.0.0.1:1", poolSize: \(tasks), maxQueue: \(tasks * 10)}
                  media: {url: "http://127.0.0.1:1/media", poolSize: \(media), maxQueue: \(media * 10)}
                  search: {url: "http://127.0.0.1:2"}
                """, file: "t.yaml")
            let limits = configuration.poolLimits
            #expect(limits[try BaseURL("http://127.0.0.1:1").origin]?.capacity == 20)
            #expect(limits[try BaseURL("http://127.0.0.1:1").origin]?.maxQueue == 200)
            #expect(limits[try BaseURL("http://127.0.0.1:2").origin]?.capacity == 64)
            #expect(limits[try BaseURL("http://127.0.0.1:2").origin]?.maxQueue == 10_000)
            #expect(limits.count == 2)
        }
    }

    @Test("circuitBreaker: on for every upstream (5 failures, 10s open) unless set; failures: 0 or enabled: false turns it off")
    func circuitBreaker() throws {
        let configuration = try Configuration.load(yaml: """
            upstreams:
              plain: {url: "http://127.0.0.1:1"}
              tuned: {url: "http://127.0.0.1:1", circuitBreaker: {failures: 3, openFor: 1500ms}}
              zero: {url: "http://127.0.0.1:1", circuitBreaker: {failures: 0}}
              disabled: {url: "http://127.0.0.1:1", circuitBreaker: {enabled: false, failures: 9}}
            """, file: "t.yaml")
        #expect(configuration.upstreams["plain"]?.circuitBreaker == CircuitBreaker.Settings(failures: 5, openFor: .seconds(10)))
        #expect(configuration.upstreams["tuned"]?.circuitBreaker == CircuitBreaker.Settings(failures: 3, openFor: .milliseconds(1500)))
        #expect(configuration.upstreams["zero"]?.circuitBreaker.isEnabled == false)
        #expect(configuration.upstreams["disabled"]?.circuitBreaker.isEnabled == false)
    }

    @Test("the command line beats the environment, which beats the file")
    func layering() throws {
        let environment = ["TRIBUTARY_LISTEN": "127.0.0.1:9000", "TRIBUTARY_UPSTREAM_TASKS": "http://10.0.0.1:1", "TRIBUTARY_WORKERS": "2"]
        let fromEnvironment = try Configuration.load(yaml: Self.shipped, file: "f", environment: environment)
        #expect(fromEnvironment.server.listen.port == 9000)
        #expect(fromEnvironment.upstreams["tasks"]?.url.description == "http://10.0.0.1:1")
        #expect(fromEnvironment.server.workers == 2)
        let fromCommandLine = try Configuration.load(
            yaml: Self.shipped, file: "f", environment: environment,
            overrides: .init(listen: "[::1]:9001", upstreams: ["tasks=https://tasks.example:8443/api", "search=http://s:2"]))
        #expect(fromCommandLine.server.listen == ListenAddress(host: "::1", port: 9001))
        #expect(fromCommandLine.upstreams["tasks"]?.url.description == "https://tasks.example:8443/api")
        #expect(fromCommandLine.upstreams["search"]?.url.description == "http://s:2")
        #expect(fromCommandLine.upstreams["media"]?.url.description == "http://127.0.0.1:8081")
    }

    @Test("every mistake names its key", arguments: [
        ("upstreams:\n  tasks:\n    url: ftp://x\n", "t.yaml: upstreams.tasks.url: \"ftp://x\" must start with http:// or https://"),
        ("upstreams:\n  tasks:\n    timeout: 5s\n", "t.yaml: upstreams.tasks.url: required"),
        ("upstreams:\n  tasks:\n    url: http://x\n    poolSize: many\n", "t.yaml: upstreams.tasks.poolSize: expected a whole number from 1 to 4096, found \"many\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    timeout: soon\n", "t.yaml: upstreams.tasks.timeout: expected a duration such as 250ms, 5s or 1m from 1ms to 1h, found \"soon\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    timeout: 99999999999999999999h\n", "t.yaml: upstreams.tasks.timeout: expected a duration such as 250ms, 5s or 1m from 1ms to 1h, found \"99999999999999999999h\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    circuitBreaker: {failures: -1}\n", "t.yaml: upstreams.tasks.circuitBreaker.failures: expected a whole number from 0 to 1000000, found \"-1\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    circuitBreaker: {openFor: 0s}\n", "t.yaml: upstreams.tasks.circuitBreaker.openFor: expected a duration such as 250ms, 5s or 1m from 1ms to 24h, found \"0s\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    circuitBreaker: {enabled: maybe}\n", "t.yaml: upstreams.tasks.circuitBreaker.enabled: expected true or false, found \"maybe\""),
        ("upstreams:\n  tasks:\n    url: http://x\n    circuitBreaker: {failure: 3}\n", "t.yaml: upstreams.tasks.circuitBreaker.failure: unknown key"),
        ("upstreams:\n  tasks:\n    url: http://x\n    circuitBreaker: off\n", "t.yaml: upstreams.tasks.circuitBreaker: expected a mapping of keys"),
        ("server:\n  lisen: 1.2.3.4:5\n", "t.yaml: server.lisen: unknown key"),
        ("server:\n  listen: nowhere\n", "t.yaml: server.listen: expected HOST:PORT, found \"nowhere\""),
        ("server:\n  logLevel: loud\n", "t.yaml: server.logLevel: expected one of"),
        ("server:\n  logFormat: xml\n", "t.yaml: server.logFormat: expected text or json, found \"xml\""),
        ("server:\n  staleIfErrorBytes: 64MiB\n", "t.yaml: server.staleIfErrorBytes: expected a whole number from 0 to 4294967296, found \"64MiB\""),
        ("server:\n  staleIfErrorBytes: -1\n", "t.yaml: server.staleIfErrorBytes: expected a whole number from 0 to 4294967296, found \"-1\""),
        ("server:\n  maxClientSharePercent: 0\n", "t.yaml: server.maxClientSharePercent: expected a whole number from 1 to 100, found \"0\""),
        ("server:\n  maxClientSharePercent: 101\n", "t.yaml: server.maxClientSharePercent: expected a whole number from 1 to 100, found \"101\""),
        ("server:\n  maxClientSharePercent: 10%\n", "t.yaml: server.maxClientSharePercent: expected a whole number from 1 to 100, found \"10%\""),
        ("server:\n  maxRateLimitBuckets: 999\n", "t.yaml: server.maxRateLimitBuckets: expected a whole number from 1000 to 10000000, found \"999\""),
        ("server:\n  maxRateLimitBuckets: 18446744073709551616\n", "t.yaml: server.maxRateLimitBuckets: expected a whole number from 1000 to 10000000"),
        ("resources:\n  groups:\n    kind: list\n    upstream: nope\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n", "t.yaml: resources.groups.upstream: no upstream named nope"),
        ("resources:\n  groups:\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: /g/x}\n", "t.yaml: resources.groups.details.path: must hold {id} exactly once"),
        ("resources:\n  groups:\n    kind: tree\n", "t.yaml: resources.groups.kind: unknown resource kind \"tree\""),
        ("resources:\n  groups:\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n    concurrency: 0\n", "t.yaml: resources.groups.concurrency: expected a whole number from 1 to 1024, found \"0\""),
        ("resources:\n  groups:\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n    coalesce: maybe\n", "t.yaml: resources.groups.coalesce: expected true or false, found \"maybe\""),
        ("resources:\n  s:\n    kind: search\n    upstream: x\n    path: /s\n    staleIfError: soon\n", "t.yaml: resources.s.staleIfError: expected a duration such as 250ms"),
        ("resources:\n  s:\n    kind: search\n    upstream: x\n    path: /s\n    staleIfError: 0s\n", "t.yaml: resources.s.staleIfError: expected a duration such as 250ms, 5s or 1m from 1ms to 168h, found \"0s\""),
        ("cluster:\n  redis: http://x:1\n", "t.yaml: cluster.redis: \"http://x:1\""),
        ("cluster:\n  redis: redis://x:99999\n", "t.yaml: cluster.redis: \"redis://x:99999\": the port must be 1…65535"),
        ("cluster:\n  leaseTTL: 3s\n", "t.yaml: cluster.redis: required"),
        ("cluster:\n  redis: redis://x\n  leaseTTL: 10ms\n", "t.yaml: cluster.leaseTTL: expected a duration such as 250ms, 5s or 1m from 300ms to 1h, found \"10ms\""),
        ("cluster:\n  redis: redis://x\n  keyPrefix: \"a b\"\n", "t.yaml: cluster.keyPrefix: expected a non-empty prefix without spaces"),
        ("cluster:\n  redis: redis://x\n  lease: 3s\n", "t.yaml: cluster.lease: unknown key"),
        ("upstreams:\n  x: {url: http://x}\nresources:\n  \"a.b\":\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n", "t.yaml: resources.a.b: a resource name is made of letters, digits, - and _ only"),
        ("upstreams:\n  x: {url: http://x}\nresources:\n  \"{id}\":\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n", "t.yaml: resources.{id}: a resource name is made of"),
        ("upstreams:\n  x: {url: http://x}\nresources:\n  events:\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n", "t.yaml: resources.events: the name events is reserved"),
        ("upstreams:\n  x: {url: http://x}\nresources:\n  readyz:\n    kind: list\n    upstream: x\n    list: {path: /g}\n    details: {path: \"/g/{id}\"}\n", "t.yaml: resources.readyz: the name readyz is reserved"),
        ("[1, 2]", "t.yaml: the top level must be a mapping of keys"),
        ("a: [", "t.yaml: not valid YAML"),
    ])
    func namesTheKey(_ yaml: String, _ expected: String) {
        let message = problem(yaml)
        #expect(message?.hasPrefix(expected) == true, "got \(message ?? "no error")")
    }

    @Test("coalesce is on and staleIfError off unless set, on every kind of resource")
    func answerSettings() throws {
        let shipped = try Configuration.load(yaml: Self.shipped, file: "f")
        for (name, resource) in shipped.resources {
            #expect(resource.answers == Configuration.JSONAnswerSettings(coalesce: true, staleIfError: nil), "\(name)")
        }
        let configuration = try Configuration.load(yaml: """
            upstreams:
              x: {url: "http://127.0.0.1:1"}
            resources:
              l: {kind: list, upstream: x, list: {path: /l}, details: {path: "/l/{id}"}, coalesce: false, staleIfError: 30s}
              p: {kind: pages, upstream: x, list: {path: /p}, pages: {path: "/p/{id}"}, staleIfError: 1m}
              s: {kind: search, upstream: x, path: /s, coalesce: false}
            """, file: "t.yaml")
        #expect(configuration.resources["l"]?.answers == Configuration.JSONAnswerSettings(coalesce: false, staleIfError: .seconds(30)))
        #expect(configuration.resources["p"]?.answers == Configuration.JSONAnswerSettings(coalesce: true, staleIfError: .seconds(60)))
        #expect(configuration.resources["s"]?.answers == Configuration.JSONAnswerSettings(coalesce: false, staleIfError: nil))
    }

    @Test("overrides that name unknown upstreams or malformed values are refused")
    func badOverrides() {
        #expect(problem(Self.shipped, overrides: .init(upstreams: ["nope=http://x"]))?.hasPrefix("--upstream: no upstream named nope") == true)
        #expect(problem(Self.shipped, overrides: .init(upstreams: ["tasks"]))?.hasPrefix("--upstream: expected NAME=URL") == true)
        #expect(problem(Self.shipped, environment: ["TRIBUTARY_UPSTREAM_NOPE": "http://x"])?.hasPrefix("TRIBUTARY_UPSTREAM_NOPE: no upstream named nope") == true)
        #expect(problem(Self.shipped, environment: ["TRIBUTARY_LISTEN": "x"])?.hasPrefix("TRIBUTARY_LISTEN: expected HOST:PORT") == true)
        #expect(problem(Self.shipped, environment: ["TRIBUTARY_WORKERS": "0"])?.hasPrefix("TRIBUTARY_WORKERS: expected a whole number from 1 to 256 or auto") == true)
        #expect(problem(Self.shipped, environment: ["TRIBUTARY_REDIS_URL": "redis://"])?.hasPrefix("TRIBUTARY_REDIS_URL: \"redis://\"") == true)
        #expect(problem(Self.shipped, overrides: .init(redis: "redis://h:0"))?.hasPrefix("--redis: \"redis://h:0\"") == true)
    }

    @Test("the fleet's Redis comes from cluster.redis, TRIBUTARY_REDIS_URL or --redis, in that order of strength; the file's other cluster keys stay")
    func clusterLayering() throws {
        let yaml = Self.shipped + "\ncluster:\n  leaseTTL: 1500ms\n  keyPrefix: blue\n  secret: \(FleetTests.secret)\n"
        #expect(throws: ConfigurationError.self) { try Configuration.load(yaml: yaml, file: "f") }
        let fromEnvironment = try Configuration.load(yaml: yaml, file: "f", environment: ["TRIBUTARY_REDIS_URL": "redis://10.0.0.5:6380/2"])
        #expect(fromEnvironment.cluster?.redis == RedisEndpoint(host: "10.0.0.5", port: 6380, database: 2))
        #expect(fromEnvironment.cluster?.leaseTTL == .milliseconds(1500))
        #expect(fromEnvironment.cluster?.keyPrefix == "blue")
        let fromCommandLine = try Configuration.load(
            yaml: yaml, file: "f", environment: ["TRIBUTARY_REDIS_URL": "redis://10.0.0.5:6380"], overrides: .init(redis: "redis://[::1]:7000"))
        #expect(fromCommandLine.cluster?.redis == RedisEndpoint(host: "::1", port: 7000))
        #expect(try Configuration.load(yaml: Self.shipped, file: "f").cluster == nil, "no fleet unless asked")
        let defaults = try Configuration.load(
            yaml: Self.shipped, file: "f", environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret], overrides: .init(redis: "redis://r"))
        #expect(defaults.cluster?.leaseTTL == .seconds(3))
        #expect(defaults.cluster?.keyPrefix == "tributary")
    }

    @Test("cluster.secret (or TRIBUTARY_CLUSTER_SECRET, which wins) is required with a Redis, at least 16 bytes, and never shown")
    func clusterSecret() throws {
        let fleet = Self.shipped + "\ncluster:\n  redis: redis://r\n"
        #expect(problem(fleet)?.hasPrefix("t.yaml: cluster.secret: required with cluster.redis") == true)
        #expect(problem(Self.shipped, overrides: .init(redis: "redis://r"))?.hasPrefix("t.yaml: cluster.secret: required") == true)
        let short = "0123456789abcde"
        let tooShort = problem(fleet + "  secret: \(short)\n")
        #expect(tooShort?.hasPrefix("t.yaml: cluster.secret: expected a secret of at least 16 bytes, found 15") == true)
        #expect(tooShort?.contains(short) == false, "the error names the key, not the secret")
        let fromEnvironment = problem(fleet, environment: ["TRIBUTARY_CLUSTER_SECRET": short])
        #expect(fromEnvironment?.hasPrefix("TRIBUTARY_CLUSTER_SECRET: expected a secret of at least 16 bytes") == true)

        let fileSecret = "file-secret-0123456789abcdef"
        let configuration = try Configuration.load(yaml: fleet + "  secret: \(fileSecret)\n", file: "t.yaml")
        #expect(configuration.cluster?.secret == (try ClusterSecret(fileSecret, at: "test")))
        let overridden = try Configuration.load(
            yaml: fleet + "  secret: \(fileSecret)\n", file: "t.yaml", environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret])
        #expect(overridden.cluster?.secret == (try ClusterSecret(FleetTests.secret, at: "test")))
        #expect(try Configuration.load(yaml: Self.shipped, file: "t.yaml", environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret]).cluster == nil,
                "a secret alone makes no fleet")

        // However the configuration is printed, the secret is not in it.
        var dumped = ""
        dump(overridden, to: &dumped)
        for text in ["\(overridden)", String(reflecting: overridden), dumped, "\(overridden.cluster!)", String(reflecting: overridden.cluster!.secret!)] {
            #expect(!text.contains(FleetTests.secret) && !text.contains(fileSecret))
        }
        #expect("\(overridden.cluster!.secret!)" == "<secret>")
        // A file that is not YAML says where, without quoting the line.
        let unquoted = problem("cluster:\n  redis: redis://r\n  secret: \"\(fileSecret)\n")
        #expect(unquoted?.hasPrefix("t.yaml: not valid YAML: 4:1: while scanning a quoted scalar (line 3)") == true, "\(unquoted ?? "")")
        #expect(unquoted?.contains(fileSecret) == false)
        // A new secret is a new fleet: a reload keeps the running one and says so.
        #expect(configuration.restartOnlyChanges(from: overridden) == ["cluster"])
    }

    @Test("the binary refuses an invalid configuration with the key in its message and exit status 1", arguments: [
        ("concurrency: lots", "resources.groups.concurrency: expected a whole number from 1 to 1024, found \"lots\""),
        // Once a trap (`interval * burst` overflowed) rather than a refusal.
        ("concurrency: 16\n    rateLimit: {rate: 1/h, burst: 3000000000}",
         "resources.groups.rateLimit.burst: expected a whole number from 1 to 1000000, found \"3000000000\""),
    ])
    func binaryRefusesInvalidConfiguration(replacement: String, message: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-bad-\(UUID().uuidString).yaml")
        let invalid = Self.shipped.replacing(/concurrency: \d+/, with: replacement, maxReplacements: 1)
        #expect(invalid != Self.shipped)
        try invalid.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let process = try SpawnedProcess(ServiceProcess.binary.path, ["serve", "--config", file.path, "--listen", "127.0.0.1:0"])
        // Bounded: a server that wrongly starts is stopped rather than waited for forever.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(20))
            process.signal(SIGKILL)
        }
        let status = await process.exitStatus()
        watchdog.cancel()
        let output = process.output.value
        #expect(status == 1)
        #expect(output.contains(message), "\(output)")
    }
}

@Suite("Configuration reload: what applies live")
struct ConfigurationReloadRulesTests {
    static func yaml(listen: String = "127.0.0.1:8080", heartbeat: String = "15s", adminToken: String = "", poolSize: Int = 8,
                     timeout: String = "5s", refreshInterval: String = "5s") -> String {
        """
        server: {listen: "\(listen)", workers: 1, adminToken: "\(adminToken)"}
        sse: {heartbeat: \(heartbeat)}
        upstreams:
          tasks: {url: "http://127.0.0.1:1", poolSize: \(poolSize), timeout: \(timeout)}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: \(refreshInterval)
        """
    }

    static func load(_ yaml: String) throws -> Configuration {
        try Configuration.load(yaml: yaml, file: "t.yaml")
    }

    @Test("restart-only settings are named and keep their running values; the admin token applies")
    func restartOnly() throws {
        let running = try Self.load(Self.yaml())
        let loaded = try Self.load(Self.yaml(listen: "127.0.0.1:9090", heartbeat: "5s", adminToken: "secret"))
        #expect(loaded.restartOnlyChanges(from: running) == ["server.listen", "sse"])
        let applied = loaded.keepingRestartOnlySettings(of: running)
        #expect(applied.server.listen == running.server.listen)
        #expect(applied.sse == running.sse)
        #expect(applied.server.adminToken == "secret")
        #expect(applied.restartOnlyChanges(from: running).isEmpty)
    }

    @Test("server.staleIfErrorBytes is 64 MiB unless set, and a reload applies it")
    func staleIfErrorBytes() throws {
        let running = try Self.load(Self.yaml())
        #expect(running.server.staleIfErrorBytes == 64 * 1024 * 1024)
        let loaded = try Self.load(Self.yaml().replacingOccurrences(of: "workers: 1,", with: "workers: 1, staleIfErrorBytes: 1000000,"))
        #expect(loaded.server.staleIfErrorBytes == 1_000_000)
        #expect(loaded.restartOnlyChanges(from: running).isEmpty)
        #expect(loaded.keepingRestartOnlySettings(of: running).server.staleIfErrorBytes == 1_000_000)
    }

    @Test("a resource's definition covers its settings and its upstream's calls, not the upstream's pool limits")
    func definition() throws {
        let running = try Self.load(Self.yaml())
        #expect(try Self.load(Self.yaml(poolSize: 2)).definition(of: "groups") == running.definition(of: "groups"))
        #expect(try Self.load(Self.yaml(timeout: "9s")).definition(of: "groups") != running.definition(of: "groups"))
        #expect(try Self.load(Self.yaml(refreshInterval: "7s")).definition(of: "groups") != running.definition(of: "groups"))
        #expect(running.definition(of: "rows") == nil)
    }
}
