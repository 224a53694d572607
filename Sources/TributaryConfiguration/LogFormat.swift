/// How log lines are written (`server.logFormat`).
public enum LogFormat: String, Sendable, Equatable, CaseIterable {
    /// swift-log's `StreamLogHandler`: `2026-11-29T01:13:35+0000 info tributary: route=/groups
    /// trace_id=… [TributaryServer] GET /groups 200 1.2ms`.
    case text
    /// One JSON object per line: `JSONLogHandler` (TributaryServer).
    case json
}
