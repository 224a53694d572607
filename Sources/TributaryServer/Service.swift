import Aggregation
public import Telemetry
import EventLoop
public import Logging
import Glibc
import Synchronization

/// Runs Tributary: the process's ``ProcessShares``, built once, and `server.workers` workers
/// alike, each an event loop on a thread of its own (the first on the calling thread, which
/// is also the shares' home loop: the shared live pipelines and the fleet's agent run there),
/// all listening on one port with SO_REUSEPORT. SIGINT and
/// SIGTERM stop it gracefully: no new connections, event streams ended, requests in flight
/// answered within `server.shutdownTimeout`. SIGHUP reloads the configuration when `reload`
/// says how to read it again (``ConfigurationReloader``). Returns when every worker has stopped.
public enum Service {
    /// Runs until a stop signal; `ready` is called with the bound port once all workers listen.
    /// `reload` reads the configuration again from the sources it was read from at start.
    public static func run(
        configuration: Configuration, logger: Logger, spans: Spans? = nil, reload: (() throws -> Configuration)? = nil,
        ready: (UInt16) -> Void = { _ in }
    ) throws {
        // Until the SIGHUP watcher is installed, a reload signal (an operator's script that runs
        // as the service starts) must not end the process, which is SIGHUP's default action.
        signal(SIGHUP, SIG_IGN)
        raiseOpenFileLimit(logger: logger)
        for caution in configuration.cautions { logger.warning("\(caution.key) \(caution.message)") }
        // libevent's messages repeat once per event (a refused connect, a failed accept):
        // debug-level lines, where the metrics and the service's own warnings say it once.
        LibeventLog.route { severity, message in
            logger.log(level: severity == .error ? .error : .debug, "\(message)", metadata: ["source": "libevent"])
        }
        let shared = configuration.server.workers > 1
        let loop = try EventLoop()
        let shares = ProcessShares(configuration: configuration, home: loop, logger: logger, spans: spans)
        let first = try Worker(configuration: configuration, loop: loop, logger: logger, shares: shares)
        let port = try first.bind(reusePort: shared)
        var others: [(worker: LoopBound<Worker>, stopped: Latch<Void>)] = []
        for index in 1..<configuration.server.workers {
            others.append(try startWorker(index, configuration: configuration, port: port, shares: shares, logger: logger))
        }
        let reloader = reload.map { ConfigurationReloader(load: $0, first: first, others: others.map(\.worker), logger: logger) }
        let deadline = configuration.server.shutdownTimeout
        var stopping = false
        let stop = {
            guard !stopping else { return }
            stopping = true
            reloader?.stop()
            logger.info("stopping", metadata: ["deadline": "\(deadline)"])
            for other in others {
                let worker = other.worker
                worker.loop.execute { worker.value.shutDown(within: deadline) { worker.loop.stop() } }
            }
            first.shutDown(within: deadline) { loop.stop() }
        }
        var watchers = try [SIGINT, SIGTERM].map { try SignalWatcher(loop: loop, signal: $0, action: stop) }
        if let reloader { watchers.append(try SignalWatcher(loop: loop, signal: SIGHUP) { reloader.reload() }) }
        logger.info("listening", metadata: ["address": "\(configuration.server.listen.host):\(port)", "workers": "\(configuration.server.workers)"])
        ready(port)
        try withExtendedLifetime((first, watchers)) { try loop.run() }
        for other in others { other.stopped.wait() }
        logger.info("stopped")
    }

    /// Starts worker `index` on a thread of its own, listening on `port` with the others.
    private static func startWorker(
        _ index: Int, configuration: Configuration, port: UInt16, shares: ProcessShares, logger: Logger
    ) throws -> (worker: LoopBound<Worker>, stopped: Latch<Void>) {
        let ready = Latch<Result<LoopBound<Worker>, any Error>>()
        let stopped = Latch<Void>()
        DetachedThread {
            do {
                let loop = try EventLoop()
                var workerLogger = logger
                workerLogger[metadataKey: "worker"] = "\(index)"
                let worker = try Worker(configuration: configuration, loop: loop, logger: workerLogger, shares: shares)
                try worker.bind(port: port, reusePort: true)
                ready.set(.success(LoopBound(worker, loop: loop)))
                try withExtendedLifetime(worker) { try loop.run() }
            } catch {
                ready.set(.failure(error))
            }
            stopped.set(())
        }.start()
        return (try ready.wait().get(), stopped)
    }

    /// Lifts the soft limit on open files to the hard one: every connection, upstream one
    /// included, is a file descriptor, and 10,000 event streams need more than the usual 1,024.
    private static func raiseOpenFileLimit(logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
            logger.debug("open file limit raised", metadata: ["limit": "\(limit.rlim_cur)"])
        }
    }

    /// Runs only the demo upstream, on the calling thread, until a stop signal.
    public static func runDemoUpstream(on address: ListenAddress, slowDetail: Duration = .zero, logger: Logger) throws {
        let loop = try EventLoop()
        let demo = try DemoUpstream(loop: loop, slowDetail: slowDetail)
        let port = try demo.bind(address)
        let watchers = try [SIGINT, SIGTERM].map { try SignalWatcher(loop: loop, signal: $0) { loop.stop() } }
        logger.info("demo upstream listening", metadata: ["address": "\(address.host):\(port)"])
        try withExtendedLifetime((demo, watchers)) { try loop.run() }
    }

    /// Runs the demo upstream on its own thread and returns its port.
    public static func startDemoUpstream(on address: ListenAddress, slowDetail: Duration = .zero, logger: Logger) throws -> UInt16 {
        let ready = Latch<Result<UInt16, any Error>>()
        DetachedThread {
            do {
                let loop = try EventLoop()
                let demo = try DemoUpstream(loop: loop, slowDetail: slowDetail)
                ready.set(.success(try demo.bind(address)))
                try withExtendedLifetime(demo) { try loop.run() }
            } catch {
                ready.set(.failure(error))
            }
        }.start()
        let port = try ready.wait().get()
        logger.info("demo upstream listening", metadata: ["address": "\(address.host):\(port)"])
        return port
    }
}
