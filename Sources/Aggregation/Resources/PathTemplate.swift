import Libevent

/// An upstream path with one `{id}` placeholder, e.g. `/groups/{id}/metadata`.
///
/// The id is percent-encoded as exactly one path segment, so whatever an upstream returns as
/// an id (`../../admin`, `a/b`, `x?y`) cannot reach another path: `/groups/..%2F..%2Fadmin/metadata`.
/// Ids that are themselves dot segments (`.`, `..`) or empty are refused.
public struct PathTemplate: Sendable, Equatable, CustomStringConvertible {
    public let prefix: String
    public let suffix: String

    /// Fails unless `text` starts with `/` and holds `{id}` exactly once.
    public init?(_ text: String) {
        guard text.hasPrefix("/"), text.ranges(of: "{id}").count == 1, let placeholder = text.firstRange(of: "{id}") else {
            return nil
        }
        prefix = String(text[..<placeholder.lowerBound])
        suffix = String(text[placeholder.upperBound...])
    }

    /// The path for `id`, or nil when `id` cannot be one path segment.
    public func path(for id: String) -> String? {
        guard !id.isEmpty, id != ".", id != ".." else { return nil }
        // One string with room for all three parts: `prefix + id + suffix` allocated twice
        // (once for each `+`), for every detail call.
        let encoded = QueryString.percentEncoded(id)
        var path = prefix
        path.reserveCapacity(prefix.utf8.count + encoded.utf8.count + suffix.utf8.count)
        path.append(encoded)
        path.append(suffix)
        return path
    }

    public var description: String { prefix + "{id}" + suffix }
}
