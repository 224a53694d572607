public import Logging

/// How log lines are written (`server.logFormat`).
public enum LogFormat: String, Sendable, Equatable, CaseIterable {
    /// swift-log's `StreamLogHandler`: `2026-11-29T01:13:35+0000 info tributary: route=/groups
    /// trace_id=… [TributaryServer] GET /groups 200 1.2ms`.
    case text
    /// One JSON object per line: ``JSONLogHandler``.
    case json
}

extension Logger {
    /// Tributary's logger: lines on standard error at `level` (one of ``Configuration/logLevels``),
    /// in `format`.
    public static func tributary(level: String, format: LogFormat = .text) -> Logger {
        var logger = Logger(label: "tributary") { label -> any LogHandler in
            switch format {
            case .text: StreamLogHandler.standardError(label: label)
            case .json: JSONLogHandler(label: label)
            }
        }
        logger.logLevel = Logger.Level(rawValue: level) ?? .info
        return logger
    }
}
