import CLibevent
import Synchronization

/// Where libevent's own messages go. By default libevent prints them on standard error, one
/// per event: a process out of file descriptors, or an upstream refusing connections, would
/// flood it. ``route(_:)`` hands them to the service's logger instead.
///
/// ```swift
/// LibeventLog.route { severity, message in logger.debug("\(message)", metadata: ["libevent": "\(severity)"]) }
/// ```
public enum LibeventLog {
    /// A libevent message's severity.
    public enum Severity: String, Sendable {
        case debug, message, warning, error
    }

    private static let handler = Mutex<(@Sendable (Severity, String) -> Void)?>(nil)

    /// Sends every libevent message to `handler` from now on (on whichever thread logs it).
    public static func route(_ handler: @escaping @Sendable (Severity, String) -> Void) {
        self.handler.withLock { $0 = handler }
        event_set_log_callback { severity, message in
            guard let message else { return }
            let level: Severity = switch severity {
            case EVENT_LOG_DEBUG: .debug
            case EVENT_LOG_MSG: .message
            case EVENT_LOG_WARN: .warning
            default: .error
            }
            let text = String(cString: message)
            LibeventLog.handler.withLock { $0 }?(level, text)
        }
    }
}
