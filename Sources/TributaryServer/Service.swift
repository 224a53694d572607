import Aggregation
public import Telemetry
import EventLoop
public import Logging
import Glibc
import Synchronization
public import TributaryConfiguration

/// Runs Tributary: the process's ``ProcessShares``, built once, and `server.workers` workers
/// alike, each an event loop on a thread of its own (the first on the calling thread), all
/// listening on one port with SO_REUSEPORT; each runs the shared live pipelines whose keys
/// fall to it. The process's own loop, on one more thread (a process of one worker shares
/// its loop), serves no request: signals, reloads, and the fleet's agent and the JWKS
/// fetcher (``ProcessShares/loop``). SIGINT and SIGTERM stop it
/// gracefully: no new connections, event streams ended, requests in flight answered within
/// `server.shutdownTimeout`. SIGHUP reloads the configuration when `reload` says how to read
/// it again (``ConfigurationReloader``). Returns when every worker has stopped.
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
        let reusePort = configuration.server.workers > 1
        // Worker 0 runs on the calling thread and binds the configured port (0: any free one);
        // the others, on threads of their own, join it. The process's own loop is one more
        // thread, except in a process of one worker, which it shares: a second thread would
        // make glibc take its multi-threaded paths (locked malloc, cancellable system calls),
        // about 1 % more instructions per request.
        let firstLoop = try EventLoop()
        let loop = configuration.server.workers > 1 ? try EventLoop() : firstLoop
        let shares = ProcessShares(configuration: configuration, loop: loop, logger: logger, spans: spans)
        let first = try Worker(configuration: configuration, loop: firstLoop, logger: logger.forWorker(0), shares: shares)
        let port = try first.bind(reusePort: reusePort)
        var others: [(worker: LoopBound<Worker>, port: UInt16, stopped: Latch<Void>)] = []
        for index in 1..<configuration.server.workers {
            others.append(try startWorker(index, configuration: configuration, port: port, shares: shares, logger: logger))
        }
        let workers = [LoopBound(first, loop: firstLoop)] + others.map(\.worker)
        let reloader = reload.map {
            ConfigurationReloader(load: $0, running: configuration, workers: workers, shares: shares, loop: loop, logger: logger)
        }
        let deadline = configuration.server.shutdownTimeout
        var stopping = false
        let stop = {
            guard !stopping else { return }
            stopping = true
            reloader?.stop()
            logger.info("stopping", metadata: ["deadline": "\(deadline)"])
            shares.cluster?.leave()
            for worker in workers {
                worker.loop.execute { worker.value.shutDown(within: deadline) { worker.loop.stop() } }
            }
        }
        var watchers = try [SIGINT, SIGTERM].map { try SignalWatcher(loop: loop, signal: $0, action: stop) }
        if let reloader { watchers.append(try SignalWatcher(loop: loop, signal: SIGHUP) { reloader.reload() }) }
        // The process's own loop, on a thread of its own until the last worker stopped (the
        // fleet's agent may still be saying goodbye to Redis meanwhile).
        let processStopped = loop === firstLoop ? nil : Latch<Void>()
        if let processStopped {
            let duties = LoopBound(watchers, loop: loop)
            DetachedThread {
                do { try loop.run() } catch { logger.error("the process's loop failed", metadata: ["error": "\(error)"]) }
                duties.release()
                processStopped.set(())
            }.start()
        }
        logger.info("listening", metadata: ["address": "\(configuration.server.listen.host):\(port)", "workers": "\(configuration.server.workers)"])
        ready(port)
        try withExtendedLifetime((first, watchers)) { try firstLoop.run() }
        for other in others { other.stopped.wait() }
        if let processStopped {
            loop.stop()
            processStopped.wait()
        }
        logger.info("stopped")
    }

    /// Starts worker `index` on a thread of its own, listening on `port` with the others;
    /// returns it with the port it bound and a latch set once its loop stopped.
    private static func startWorker(
        _ index: Int, configuration: Configuration, port: UInt16, shares: ProcessShares, logger: Logger
    ) throws -> (worker: LoopBound<Worker>, port: UInt16, stopped: Latch<Void>) {
        let ready = Latch<Result<(LoopBound<Worker>, UInt16), any Error>>()
        let stopped = Latch<Void>()
        DetachedThread {
            do {
                let loop = try EventLoop()
                let worker = try Worker(configuration: configuration, loop: loop, logger: logger.forWorker(index), shares: shares)
                let bound = try worker.bind(port: port, reusePort: true)
                ready.set(.success((LoopBound(worker, loop: loop), bound)))
                try withExtendedLifetime(worker) { try loop.run() }
            } catch {
                ready.set(.failure(error))
            }
            stopped.set(())
        }.start()
        let (worker, bound) = try ready.wait().get()
        return (worker, bound, stopped)
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

extension Logger {
    /// This logger, its lines naming worker `index`.
    fileprivate func forWorker(_ index: Int) -> Logger {
        var logger = self
        logger[metadataKey: "worker"] = "\(index)"
        return logger
    }
}
