import HTTPCore

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

    /// The template around `{id}`: `prefix` before it, `suffix` after it (both already
    /// percent-encoded where they need to be).
    public init(prefix: String, suffix: String) {
        self.prefix = prefix
        self.suffix = suffix
    }

    /// The path for `id`, or nil when `id` cannot be one path segment.
    public func path(for id: String) -> String? {
        var id = id
        return id.withUTF8 { path(forID: $0) }
    }

    /// The path for the id whose UTF-8 is `id` (as ``path(for:)``): for an id read in place
    /// from an item's text (``RawJSON/withStringMember(named:_:)``).
    public func path(forID id: UnsafeBufferPointer<UInt8>) -> String? {
        guard !id.isEmpty, !Self.isDotSegment(id) else { return nil }
        // One allocation, written in place: `prefix + encoded + suffix` made three
        // strings per detail call.
        // Room for every byte of the id encoded: one pass over it, not one to count first.
        let prefix = prefix.utf8, suffix = suffix.utf8
        return String(unsafeUninitializedCapacity: prefix.count + 3 * id.count + suffix.count) { buffer in
            var written = UnsafeMutableBufferPointer(rebasing: buffer[...]).initialize(from: prefix).1
            written += QueryString.writePercentEncoded(id, into: UnsafeMutableBufferPointer(rebasing: buffer[written...]))
            written += UnsafeMutableBufferPointer(rebasing: buffer[written...]).initialize(from: suffix).1
            return written
        }
    }

    /// `.` or `..`: a segment that would move the path rather than name an item.
    private static func isDotSegment(_ id: UnsafeBufferPointer<UInt8>) -> Bool {
        id.count <= 2 && id.allSatisfy { $0 == UInt8(ascii: ".") }
    }

    public var description: String { prefix + "{id}" + suffix }
}
