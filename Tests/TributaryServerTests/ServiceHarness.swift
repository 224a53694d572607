import Aggregation
import EventLoop
import Logging
import TributaryConfiguration
import TributaryServer
import TributaryTesting

/// A Tributary worker on a loop thread of its own, configured from YAML, listening on a
/// free loopback port: the service as clients see it.
final class ServiceHarness: Sendable {
    let port: UInt16
    let thread: LoopThread
    private let worker: LoopBound<Worker>

    /// The default groups configuration against `upstream`, with `extra` YAML appended under
    /// the groups resource (e.g. `concurrency: 4`) and `sse` settings.
    static func groupsYAML(upstream: String, groups extra: String = "", heartbeat: String = "15s", timeout: String = "2s") -> String {
        """
        sse:
          heartbeat: \(heartbeat)
          retry: 1500ms
        upstreams:
          tasks:
            url: \(upstream)
            timeout: \(timeout)
            retries: 0
          media:
            url: \(upstream)
          search:
            url: \(upstream)
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: 1h
        \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    /// What this worker shares with the process's other workers (pass it to another worker).
    let shares: ProcessShares

    /// A worker from `yaml` on a free port of `host` (a loopback address); with `shares`, it
    /// joins another worker's process (its live pipelines, its streams' directory), as the
    /// workers of one process do.
    init(yaml: String, host: String = "127.0.0.1", shares processShares: ProcessShares? = nil) async throws {
        var configuration = try Configuration.load(yaml: yaml, file: "test.yaml")
        configuration.server.listen = ListenAddress(host: host, port: 0)
        let thread = try LoopThread()
        let (port, worker, owned) = try await thread.run { [configuration] loop in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let worker = try Worker(configuration: configuration, loop: loop, logger: logger, shares: processShares)
            return (try worker.bind(), LoopBound(worker, loop: loop), worker.shares)
        }
        self.port = port
        self.thread = thread
        self.worker = worker
        shares = owned
    }

    /// A test that throws drops its harness without ``stop()``: the worker still goes on its
    /// loop, with the loop stopping after it.
    deinit {
        let worker = self.worker
        thread.stopWithoutWaiting { worker.release() }
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> TestResponse {
        try await TestHTTP.get(port: port, path, headers: headers)
    }

    /// Whether it became ready (``TestHTTP/ready(port:timeout:)``): with `cluster.redis`, once
    /// it joined the fleet, which its first connection to Redis takes a moment to do.
    func ready() async -> Bool {
        await TestHTTP.ready(port: port)
    }

    func post(_ path: String) async throws -> TestResponse {
        try await TestHTTP.request(port: port, "POST", path)
    }

    func events(_ path: String, headers: [(String, String)] = [], receiveBuffer: Int? = nil) async throws -> SSEClient {
        try await SSEClient(port: port, path: path, headers: headers, receiveBuffer: receiveBuffer)
    }

    /// Runs `body` with the worker, on its loop.
    func withWorker<Result: Sendable>(_ body: @escaping @Sendable (Worker) -> Result) async throws -> Result {
        let worker = self.worker
        return try await thread.run { _ in body(worker.value) }
    }

    func stop() async {
        let worker = self.worker
        await thread.stop { worker.release() }
    }
}

extension TestResponse {
    /// The `{"error":{"code","message"}}` of a JSON error response.
    var error: (code: String, message: String)? {
        guard let document = try? json() as? [String: Any], let error = document["error"] as? [String: Any],
              let code = error["code"] as? String, let message = error["message"] as? String else { return nil }
        return (code, message)
    }
}
