import HTTPCore

/// An upstream path as configured, with `{name}` placeholders for the resource's parameters
/// and, in a detail or page path, `{id}` for the item: `/teams/{team}/groups?status={status}`,
/// `/teams/{team}/groups/{id}/metadata`.
///
/// Each value is percent-encoded into its place, everything but RFC 3986's unreserved
/// characters (`/`, `+`, `&`, `=`, spaces, `%` and non-ASCII included), so a value is exactly
/// one path segment or one query value whatever it holds: `a/b` stays one segment, `a&b=c`
/// cannot add a query parameter. `.` is unreserved and stays as it is, so a value that is a
/// dot segment (`..`) would still move the path: ``ParameterValidator`` refuses those before
/// anything is rendered.
///
/// ```swift
/// let list = UpstreamPath("/teams/{team}/groups?status={status}")!
/// list.rendered(with: ParameterValues(["team": "a b", "status": "open"]))   // "/teams/a%20b/groups?status=open"
/// ```
public struct UpstreamPath: Sendable, Equatable, CustomStringConvertible {
    enum Part: Sendable, Equatable {
        case literal(String)
        case placeholder(String)
    }

    let parts: [Part]
    /// The text it was made from.
    public let description: String

    /// The name that stands for an item's id in detail and page paths.
    public static let itemID = "id"

    /// Fails unless `text` starts with `/` and every `{` opens a placeholder named with
    /// letters, digits, `-` or `_` that a `}` closes.
    public init?(_ text: String) {
        guard text.hasPrefix("/") else { return nil }
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            let literal = rest[..<open]
            guard !literal.contains("}") else { return nil }
            if !literal.isEmpty { parts.append(.literal(String(literal))) }
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "}") else { return nil }
            let name = rest[afterOpen..<close]
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isNameByte) else { return nil }
            parts.append(.placeholder(String(name)))
            rest = rest[rest.index(after: close)...]
        }
        guard !rest.contains("}") else { return nil }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        self.parts = parts
        description = text
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    /// The names of its placeholders, in order, repeats included.
    public var placeholders: [String] {
        parts.compactMap { if case .placeholder(let name) = $0 { name } else { nil } }
    }

    /// The path with each placeholder replaced by its value in `values`, percent-encoded; a
    /// placeholder without a value (an optional parameter the request left out) becomes
    /// empty. `{id}`, if any, is replaced like the others: call this for paths without it.
    public func rendered(with values: ParameterValues) -> String {
        var path = ""
        for part in parts {
            switch part {
            case .literal(let text): path += text
            case .placeholder(let name): path += QueryString.percentEncoded(values[name] ?? "")
            }
        }
        return path
    }

    /// The path with every placeholder but `{id}` replaced as in ``rendered(with:)``, as the
    /// ``PathTemplate`` each item's id then goes into; nil unless it holds `{id}` exactly once.
    public func template(with values: ParameterValues) -> PathTemplate? {
        // One pass, no array of names: a parameterized resource makes its template on every
        // request.
        var prefix = "", suffix = ""
        var ids = 0
        for part in parts {
            switch part {
            case .placeholder(Self.itemID): ids += 1
            case .literal(let literal): if ids == 0 { prefix += literal } else { suffix += literal }
            case .placeholder(let name):
                let value = QueryString.percentEncoded(values[name] ?? "")
                if ids == 0 { prefix += value } else { suffix += value }
            }
        }
        return ids == 1 ? PathTemplate(prefix: prefix, suffix: suffix) : nil
    }
}

extension UpstreamPath: ExpressibleByStringLiteral {
    /// A path written in code (tests, the demo's resources); it must be valid.
    public init(stringLiteral text: String) {
        guard let path = UpstreamPath(text) else { preconditionFailure("not an upstream path: \(text)") }
        self = path
    }
}
