public import Logging

extension Logger {
    /// Tributary's logger: lines on standard error at `level` (one of ``Configuration/logLevels``).
    public static func tributary(level: String) -> Logger {
        var logger = Logger(label: "tributary") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = Logger.Level(rawValue: level) ?? .info
        return logger
    }
}
