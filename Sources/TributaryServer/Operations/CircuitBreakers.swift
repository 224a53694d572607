import Aggregation
import Logging

extension CircuitBreaker {
    /// One breaker per configured upstream, for every worker of the process (the first worker
    /// makes them and hands them on in ``Worker/Shares``). Each logs its changes once: a
    /// warning when it opens, a note when it closes again.
    static func forUpstreams(of configuration: Configuration, logger: Logger) -> [String: CircuitBreaker] {
        var breakers: [String: CircuitBreaker] = [:]
        for (name, settings) in configuration.upstreams where settings.circuitBreaker.isEnabled {
            let openFor = settings.circuitBreaker.openFor
            breakers[name] = CircuitBreaker(upstream: name, settings: settings.circuitBreaker) { transition in
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
        return breakers
    }
}
