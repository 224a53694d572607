public import Logging
public import TributaryConfiguration

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
