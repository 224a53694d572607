import CoreMetrics
import Logging

/// Counts what a replica dropped from Redis, `tributary_cluster_rejected_total{reason}` (every
/// reason shown from the start, at 0), and says so in the log: the first of each reason at
/// once, then at most one line a minute per reason with the count since, so a flood of forged
/// messages cannot flood the log too. A line names the reason and where the value was read
/// (a key or channel, which names no stream id and no secret), never its content.
/// Loop-confined.
final class FleetRejections {
    private let logger: Logger
    private let counters: [FleetRejection: Counter]
    /// Per reason: when its last line was written (ms) and what came since.
    private var logged: [FleetRejection: (at: UInt64, since: Int)] = [:]

    static let logInterval: UInt64 = 60_000

    init(logger: Logger) {
        self.logger = logger
        var counters: [FleetRejection: Counter] = [:]
        for reason in FleetRejection.allCases {
            let counter = Counter(label: "tributary_cluster_rejected_total", dimensions: [("reason", reason.rawValue)])
            counter.increment(by: 0)
            counters[reason] = counter
        }
        self.counters = counters
    }

    /// A value read from `source` was dropped for `reason`.
    func reject(_ reason: FleetRejection, from source: String) {
        counters[reason]?.increment()
        let now = WallClock.milliseconds()
        var entry = logged[reason] ?? (at: 0, since: 0)
        entry.since += 1
        if entry.at == 0 || now >= entry.at.addingSaturated(Self.logInterval) {
            logger.warning("cluster: dropped a message or value read from Redis", metadata: [
                "reason": "\(reason.rawValue)", "from": "\(source)", "dropped": "\(entry.since)",
            ])
            entry = (at: now, since: 0)
        }
        logged[reason] = entry
    }
}
