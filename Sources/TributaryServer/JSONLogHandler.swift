import Glibc
import HTTPCore
import Logging

/// `server.logFormat: json`: every log line one JSON object on standard error, for a log
/// collector to read as it is (docs/operations.md, "Logs").
///
/// ```
/// {"time":"2026-11-29T01:13:35.120Z","level":"info","message":"GET /groups 200 1.2ms","logger":"tributary","route":"/groups","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"5e1c0f0a9d3b7c21"}
/// ```
///
/// - `time`: RFC 3339 in UTC, with milliseconds; `level`: swift-log's name of the level
///   (`trace` … `critical`); `message`; `logger`: the logger's label.
/// - Then the metadata, one member each, as swift-log merges it (the logger's, its metadata
///   provider's, the line's; the later wins): a string, or an array or object of them. A
///   metadata key named as one of the four members before it is written `metadata.<key>`, so
///   that no line holds a name twice. A line's `error` is written as `error.message` and
///   `error.type`, as swift-log's own handler writes it.
///
/// Every string goes through ``JSONWriter`` (its one escaping rule: a message with a line
/// break stays on one line). A line is built in one buffer and written with one `write(2)`:
/// lines of different worker threads never interleave (a pipe takes up to 4 KiB at once
/// whole; a file opened for appending, any size).
struct JSONLogHandler: LogHandler {
    private let label: String
    private let fileDescriptor: Int32
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    /// Lines of logger `label` on standard error, or (a test) on `fileDescriptor`.
    init(
        label: String, fileDescriptor: Int32 = STDERR_FILENO, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) {
        self.label = label
        self.fileDescriptor = fileDescriptor
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line: [UInt8] = []
        line.reserveCapacity(Self.expectedLineBytes)
        line.append(contentsOf: #"{"time":""#.utf8)
        Self.appendTime(to: &line)
        line.append(contentsOf: #"","level":""#.utf8)
        line.append(contentsOf: event.level.rawValue.utf8)
        line.append(contentsOf: #"","message":"#.utf8)
        JSONWriter.appendString(event.message.description, to: &line)
        line.append(contentsOf: #","logger":"#.utf8)
        JSONWriter.appendString(label, to: &line)
        for (key, value) in effectiveMetadata(of: event) {
            line.append(UInt8(ascii: ","))
            switch key {
            case "time", "level", "message", "logger": JSONWriter.appendString("metadata." + key, to: &line)
            default: JSONWriter.appendString(key, to: &line)
            }
            line.append(UInt8(ascii: ":"))
            Self.append(value, to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
        line.withUnsafeBytes { Self.write($0, to: fileDescriptor) }
    }

    /// Room for an access log line (its message, route, trace and span ids) without growing.
    private static let expectedLineBytes = 384

    /// The metadata the line carries; the line's own as it is when there is nothing to merge
    /// (an access log line: no dictionary made).
    private func effectiveMetadata(of event: LogEvent) -> Logger.Metadata {
        let provided = metadataProvider?.get() ?? [:]
        guard !metadata.isEmpty || !provided.isEmpty || event.error != nil else { return event.metadata ?? [:] }
        var merged = metadata
        merged.merge(provided) { _, provided in provided }
        merged.merge(event.metadata ?? [:]) { _, explicit in explicit }
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        return merged
    }

    private static func append(_ value: Logger.MetadataValue, to line: inout [UInt8]) {
        switch value {
        case .string(let text):
            JSONWriter.appendString(text, to: &line)
        case .stringConvertible(let convertible):
            JSONWriter.appendString(convertible.description, to: &line)
        case .array(let values):
            line.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                append(element, to: &line)
            }
            line.append(UInt8(ascii: "]"))
        case .dictionary(let members):
            line.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(member.key, to: &line)
                line.append(UInt8(ascii: ":"))
                append(member.value, to: &line)
            }
            line.append(UInt8(ascii: "}"))
        }
    }

    /// The time now as `2026-11-29T01:13:35.120Z`: RFC 3339, UTC, milliseconds.
    private static func appendTime(to line: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        appendDigits(Int(parts.tm_year) + 1900, count: 4, to: &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mon) + 1, count: 2, to: &line)
        line.append(UInt8(ascii: "-"))
        appendDigits(Int(parts.tm_mday), count: 2, to: &line)
        line.append(UInt8(ascii: "T"))
        appendDigits(Int(parts.tm_hour), count: 2, to: &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_min), count: 2, to: &line)
        line.append(UInt8(ascii: ":"))
        appendDigits(Int(parts.tm_sec), count: 2, to: &line)
        line.append(UInt8(ascii: "."))
        appendDigits(Int(now.tv_nsec) / 1_000_000, count: 3, to: &line)
        line.append(UInt8(ascii: "Z"))
    }

    /// The last `count` decimal digits of `value` (not negative), leading zeros kept.
    private static func appendDigits(_ value: Int, count: Int, to line: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            line.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// The whole line with one `write(2)`; again from where it stopped only if interrupted or
    /// cut short, and given up (as stdio would) on any other failure.
    private static func write(_ bytes: UnsafeRawBufferPointer, to fileDescriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = Glibc.write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
