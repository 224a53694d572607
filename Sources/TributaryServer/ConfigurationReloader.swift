import CoreMetrics
import EventLoop
import Logging
import TributaryConfiguration

/// Reloads the configuration on `SIGHUP` (docs/operations.md, "Reloading the configuration"): reads it
/// again from the same sources as at start (`load`), and when it is valid has every worker
/// apply it on its own loop, with what they share taking it up around them
/// (``ProcessShares/willApply(_:ending:)`` before, ``ProcessShares/didApply(ending:)`` once
/// all have). Settings that need a restart keep their running values and are named in a
/// warning. An invalid configuration changes nothing: the error, which names the key, is
/// logged. Counted in `tributary_config_reloads_total{result}`.
///
/// Reloads do not interleave: a `SIGHUP` while the workers still apply the previous one is
/// remembered and done once they all have (several such signals make one more reload).
/// Runs on the process's own loop (``ProcessShares/loop``).
final class ConfigurationReloader {
    private let load: () throws -> Configuration
    /// The configuration applied last (or started with).
    private var running: Configuration
    private let workers: [LoopBound<Worker>]
    private let shares: ProcessShares
    private let loop: EventLoop
    private let logger: Logger
    /// Workers still applying the reload under way (nil: none is).
    private var applying: Int?
    private var another = false
    private var stopped = false
    private let succeeded = Counter(label: "tributary_config_reloads_total", dimensions: [("result", "ok")])
    private let failed = Counter(label: "tributary_config_reloads_total", dimensions: [("result", "error")])

    init(
        load: @escaping () throws -> Configuration, running: Configuration, workers: [LoopBound<Worker>], shares: ProcessShares,
        loop: EventLoop, logger: Logger
    ) {
        self.load = load
        self.running = running
        self.workers = workers
        self.shares = shares
        self.loop = loop
        self.logger = logger
    }

    /// No more reloads: the service is stopping.
    func stop() {
        stopped = true
    }

    /// Reads the configuration again and applies it, or logs why not.
    func reload() {
        guard !stopped else { return }
        guard applying == nil else {
            another = true
            return logger.info("configuration reload: waiting for the one being applied")
        }
        let loaded: Configuration
        do {
            loaded = try load()
        } catch {
            failed.increment()
            return logger.error("configuration reload failed, the running configuration stays", metadata: ["error": "\(error)"])
        }
        let restartOnly = loaded.restartOnlyChanges(from: running)
        if !restartOnly.isEmpty {
            logger.warning("configuration reload: these settings need a restart and keep their running values",
                           metadata: ["keys": "\(restartOnly.joined(separator: ", "))"])
        }
        let applied = loaded.keepingRestartOnlySettings(of: running)
        let endings = ProcessShares.endings(from: running, to: applied)
        let summary = Self.changes(from: running, to: applied, ending: endings)
        running = applied
        shares.willApply(applied, ending: endings)
        applying = workers.count
        let reloader = LoopBound(self, loop: loop)
        for worker in workers {
            worker.loop.execute {
                worker.value.apply(applied)
                reloader.loop.execute { reloader.value.workerApplied(ending: endings, summary) }
            }
        }
    }

    private func workerApplied(ending endings: [String: ResourceEnding], _ summary: Logger.Metadata) {
        guard let remaining = applying else { return }
        applying = remaining - 1
        if remaining == 1 { finished(ending: endings, summary) }
    }

    /// Every worker applied the reload: it is done; one asked for meanwhile starts now.
    private func finished(ending endings: [String: ResourceEnding], _ summary: Logger.Metadata) {
        applying = nil
        shares.didApply(ending: endings)
        succeeded.increment()
        logger.info("configuration reloaded", metadata: summary)
        if another {
            another = false
            reload()
        }
    }

    /// The resources a reload adds, removes and changes, for its log line.
    private static func changes(
        from running: Configuration, to applied: Configuration, ending endings: [String: ResourceEnding]
    ) -> Logger.Metadata {
        let added = Set(applied.resources.keys).subtracting(running.resources.keys)
        let listed = { (names: [String]) in Logger.MetadataValue.string(names.isEmpty ? "none" : names.sorted().joined(separator: ",")) }
        return ["added": listed(Array(added)), "removed": listed(endings.filter { $0.value == .removed }.map(\.key)),
                "changed": listed(endings.filter { $0.value == .changed }.map(\.key))]
    }
}
