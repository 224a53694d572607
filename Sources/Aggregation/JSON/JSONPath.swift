/// Where a value sits inside a JSON document: member names separated by dots (`result`,
/// `data.items`); the empty path is the document itself. Configuration uses it to say where
/// an upstream keeps its list or its per-item value.
///
/// ```swift
/// let items = try JSONPath("data.items").value(in: document)   // document["data"]["items"]
/// ```
public struct JSONPath: Sendable, Equatable, CustomStringConvertible {
    public let members: [String]

    public init(_ text: String) {
        members = text.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
    }

    /// The value at this path, or nil when a member is missing or not inside an object.
    public func value(in document: JSON) -> JSON? {
        var current = document
        for member in members {
            guard let next = current[member] else { return nil }
            current = next
        }
        return current
    }

    public var description: String { members.isEmpty ? "(the whole document)" : members.joined(separator: ".") }
}
