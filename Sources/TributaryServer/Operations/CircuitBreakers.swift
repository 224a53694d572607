import Aggregation
import Logging
import Synchronization
import TributaryConfiguration

extension CircuitBreaker {
    /// A breaker for upstream `name` (``CircuitBreakers`` keeps the process's one), or nil
    /// when `settings` switch it off.
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

/// The process's circuit breakers, one per upstream, shared by every worker: an upstream
/// failing is the same upstream for all of them. A reload that changes an upstream's
/// breaker settings gets a new breaker; one that leaves them as they were keeps its state.
final class CircuitBreakers: Sendable {
    private let logger: Logger
    private let breakers = Mutex<[String: (settings: CircuitBreaker.Settings, breaker: CircuitBreaker?)]>([:])

    init(logger: Logger) {
        self.logger = logger
    }

    /// Upstream `name`'s breaker for `settings` (nil when they switch it off): the one every
    /// worker uses, made by the first to ask.
    func breaker(for name: String, settings: CircuitBreaker.Settings) -> CircuitBreaker? {
        breakers.withLock { breakers in
            if let known = breakers[name], known.settings == settings { return known.breaker }
            let breaker = CircuitBreaker.forUpstream(name, settings: settings, logger: logger)
            breakers[name] = (settings, breaker)
            return breaker
        }
    }
}
