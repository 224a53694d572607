import Aggregation
import HTTPCore

/// A request target as the access log writes it, without the secrets it may carry:
///
/// - a stream id, the path segment after `streams`, keeps its first 8 characters
///   (``StreamID/redacted``): `/streams/7b10a2c4…/triggers/loadMore`. The id is the only
///   credential for its stream's triggers and inputs, and a log is read by more people, and
///   kept longer, than the stream lives;
/// - an `access_token` query value is left out: `/groups?access_token=…&x=1`.
///
/// Names compare percent-decoded, as the router and ``QueryString`` read them, so
/// `/%73treams/…` and `access%5Ftoken=` are redacted too. Everything else stays as sent.
enum RedactedTarget {
    static let redactedQueryNames: Set<String> = ["access_token"]

    static func of(_ target: String) -> String {
        guard let queryStart = target.firstIndex(of: "?") else { return redactingPath(target[...]) }
        return redactingPath(target[..<queryStart]) + "?" + redactingQuery(target[target.index(after: queryStart)...])
    }

    private static func redactingPath(_ path: Substring) -> String {
        var segments: [String] = []
        var afterStreams = false
        for segment in path.split(separator: "/", omittingEmptySubsequences: false) {
            segments.append(afterStreams ? StreamID.redacted(segment) : String(segment))
            afterStreams = QueryString.percentDecoded(String(segment)) == "streams"
        }
        return segments.joined(separator: "/")
    }

    private static func redactingQuery(_ query: Substring) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { pair in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            let decoded = QueryString.percentDecoded(String(name), plusAsSpace: true) ?? String(name)
            return redactedQueryNames.contains(decoded) ? name + "=…" : String(pair)
        }.joined(separator: "&")
    }
}
