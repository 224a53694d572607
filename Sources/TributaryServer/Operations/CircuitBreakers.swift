import Aggregation
import Logging

extension CircuitBreaker {
    /// The breaker of upstream `name`, for every worker of the process (the first worker
    /// makes it and hands it on in ``Worker/Shares``), or nil when `settings` switch it off.
    /// It logs its changes once: a warning when it opens, a note when it closes again.
    static func forUpstream(_ name: String, settings: Settings, logger: Logger) -> CircuitBreaker? {
        guard settings.isEnabled else { return nil }
        let openFor = settings.openFor
        return CircuitBreaker(upstream: name, settings: settings) { transition in
            switch transition.to {
            case .open:
                logger.warning(
                    transition.from == .halfOpen ? "upstream circuit reopened: the probe failed" : "upstream circuit opened",
                    metadata: ["upstream": "\(name)", "probe_in": "\(openFor)"])
            case .closed:
                logger.info("upstream circuit closed: the probe succeeded", metadata: ["upstream": "\(name)"])
            case .halfOpen:
                break
            }
        }
    }
}
