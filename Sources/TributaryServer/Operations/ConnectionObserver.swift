import CoreMetrics
import Glibc
import HTTPServer
import Logging

/// Sees the server's connections come and go, and `accept` fail:
///
/// - `tributary_http_connections` (a gauge, summed over the workers): client connections
///   open, counted from their accept;
/// - `tributary_http_accept_paused_total{reason}`: times `accept` failed (`EMFILE` when the
///   process is out of file descriptors) and the worker paused accepting for a moment;
/// - a warning in the log when accepting pauses, at most one every ``warningInterval``.
///
/// Loop-confined.
final class ConnectionObserver {
    static let warningInterval: Duration = .seconds(10)

    private let logger: Logger
    private let open = Meter(label: "tributary_http_connections")
    private var counted = 0
    private var pauses: [Int32: Counter] = [:]
    private var lastWarning: ContinuousClock.Instant?

    init(logger: Logger) {
        self.logger = logger
    }

    func connectionCountChanged(to count: Int) {
        let change = count - counted
        counted = count
        if change > 0 { open.increment(by: Double(change)) } else if change < 0 { open.decrement(by: Double(-change)) }
    }

    func acceptPaused(_ code: Int32) {
        let reason = Self.names[code] ?? "errno \(code)"
        counter(for: code, reason: reason).increment()
        let now = ContinuousClock.now
        guard lastWarning.map({ now - $0 >= Self.warningInterval }) ?? true else { return }
        lastWarning = now
        logger.warning("accepting paused: accept failed", metadata: [
            "reason": "\(reason) (\(String(cString: strerror(code))))", "pause": "\(HTTPServer.acceptPause)",
        ])
    }

    /// The errors that pause accepting, by their stable names (metric labels).
    private static let names: [Int32: String] = [EMFILE: "EMFILE", ENFILE: "ENFILE", ENOBUFS: "ENOBUFS", ENOMEM: "ENOMEM"]

    private func counter(for code: Int32, reason: String) -> Counter {
        if let counter = pauses[code] { return counter }
        let counter = Counter(label: "tributary_http_accept_paused_total", dimensions: [("reason", reason)])
        pauses[code] = counter
        return counter
    }
}
