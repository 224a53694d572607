import Libevent
import Glibc
public import Logging

/// Runs Tributary: one ``Worker`` per configured worker, each on an event loop of its own
/// thread (the first on the calling thread), all listening on the same port. SIGINT and
/// SIGTERM stop it. Returns when every worker has stopped.
public enum Service {
    /// Runs until a stop signal; `ready` is called with the bound port once listening.
    public static func run(configuration: Configuration, logger: Logger, ready: (UInt16) -> Void = { _ in }) throws {
        let loop = try EventLoop()
        let worker = try Worker(configuration: configuration, loop: loop, logger: logger)
        let port = try worker.bind()
        let stop = {
            logger.info("stopping")
            worker.shutDown()
            loop.stop()
        }
        let watchers = try [SIGINT, SIGTERM].map { try SignalWatcher(loop: loop, signal: $0, action: stop) }
        logger.info("listening", metadata: ["address": "\(configuration.server.listen.host):\(port)"])
        ready(port)
        try withExtendedLifetime(watchers) { try loop.run() }
    }

    /// Runs only the demo upstream, on the calling thread, until a stop signal.
    public static func runDemoUpstream(on address: ListenAddress, logger: Logger) throws {
        let loop = try EventLoop()
        let demo = try DemoUpstream(loop: loop)
        let port = try demo.bind(address)
        let watchers = try [SIGINT, SIGTERM].map { try SignalWatcher(loop: loop, signal: $0) { loop.stop() } }
        logger.info("demo upstream listening", metadata: ["address": "\(address.host):\(port)"])
        try withExtendedLifetime((demo, watchers)) { try loop.run() }
    }

    /// Runs the demo upstream on its own thread and returns its port.
    public static func startDemoUpstream(on address: ListenAddress, logger: Logger) throws -> UInt16 {
        let ready = Latch<Result<UInt16, any Error>>()
        let thread = DetachedThread {
            do {
                let loop = try EventLoop()
                let demo = try DemoUpstream(loop: loop)
                ready.set(.success(try demo.bind(address)))
                try withExtendedLifetime(demo) { try loop.run() }
            } catch {
                ready.set(.failure(error))
            }
        }
        thread.start()
        let port = try ready.wait().get()
        logger.info("demo upstream listening", metadata: ["address": "\(address.host):\(port)"])
        return port
    }
}
