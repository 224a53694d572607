import CoreMetrics
import EventLoop
import Logging

/// Reloads the configuration on `SIGHUP` (docs/operations.md, "Reloading the configuration"): reads it
/// again from the same sources as at start (`load`), and when it is valid has every worker
/// apply it on its own loop, the first worker first (it makes the shared live pipelines, on
/// the shares' home loop, so new streams on any worker get pipelines of the new definition). Settings that need a restart keep their running
/// values and are named in a warning. An invalid configuration changes nothing: the error,
/// which names the key, is logged. Counted in `tributary_config_reloads_total{result}`.
///
/// Reloads do not interleave: a `SIGHUP` while the workers still apply the previous one is
/// remembered and done once they all have (several such signals make one more reload).
/// Runs on the first worker's loop.
final class ConfigurationReloader {
    private let load: () throws -> Configuration
    private let first: Worker
    private let others: [LoopBound<Worker>]
    private let logger: Logger
    /// Workers still applying the reload under way (nil: none is).
    private var applying: Int?
    private var another = false
    private var stopped = false
    private let succeeded = Counter(label: "tributary_config_reloads_total", dimensions: [("result", "ok")])
    private let failed = Counter(label: "tributary_config_reloads_total", dimensions: [("result", "error")])

    init(load: @escaping () throws -> Configuration, first: Worker, others: [LoopBound<Worker>], logger: Logger) {
        self.load = load
        self.first = first
        self.others = others
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
        let running = first.configuration
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
        let summary = Self.changes(from: running, to: applied)
        first.apply(applied)
        applying = others.count
        let reloader = LoopBound(self, loop: first.loop)
        for other in others {
            other.loop.execute {
                other.value.apply(applied)
                reloader.loop.execute { reloader.value.workerApplied(summary) }
            }
        }
        if others.isEmpty { finished(summary) }
    }

    private func workerApplied(_ summary: Logger.Metadata) {
        guard let remaining = applying else { return }
        applying = remaining - 1
        if remaining == 1 { finished(summary) }
    }

    /// Every worker applied the reload: it is done; one asked for meanwhile starts now.
    private func finished(_ summary: Logger.Metadata) {
        applying = nil
        succeeded.increment()
        logger.info("configuration reloaded", metadata: summary)
        if another {
            another = false
            reload()
        }
    }

    /// The resources a reload adds, removes and changes, for its log line.
    private static func changes(from running: Configuration, to applied: Configuration) -> Logger.Metadata {
        let before = Set(running.resources.keys)
        let after = Set(applied.resources.keys)
        let changed = before.intersection(after).filter { running.definition(of: $0) != applied.definition(of: $0) }
        let listed = { (names: Set<String>) in Logger.MetadataValue.string(names.isEmpty ? "none" : names.sorted().joined(separator: ",")) }
        return ["added": listed(after.subtracting(before)), "removed": listed(before.subtracting(after)), "changed": listed(changed)]
    }
}
