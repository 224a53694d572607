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

    /// The path through `members`, each a whole member name (a dot in one is part of it).
    public init(members: [String]) {
        self.members = members
    }

    /// The value at this path, or nil when a member is missing or not inside an object.
    public func value(in document: JSON) -> JSON? {
        // The document is read where it is: copying it into `current` first cost a retain
        // and a release of its storage per read.
        guard let first = members.first else { return document }
        guard var current = document[first] else { return nil }
        for member in members.dropFirst() {
            guard let next = current[member] else { return nil }
            current = next
        }
        return current
    }

    /// Where the object at this path starts (its `{`), and the kept text that holds it, when
    /// `document` and every object on the way are kept as text (``JSON/raw(_:)``, their
    /// members read from it): the object ``value(in:)`` finds there, found without wrapping
    /// each step in a `JSON`, and without reading it to its end, which its reader finds (as
    /// ``RawJSON/splicingObjectSharingNoName(at:of:)`` does). Nil otherwise (nothing there, not an
    /// object, or not kept so): ``value(in:)`` then tells which.
    func keptObjectStart(in document: JSON) -> (container: RawJSON, start: Int)? {
        guard case .raw(let root) = document else { return nil }
        guard let last = members.last else { return (root, root.textStart) }
        // A path of one member, the common case, reads the document where it is (a variable
        // for it cost a copy of the document).
        guard members.count > 1 else { return root.objectMemberStart(named: last).map { (root, $0) } }
        var container = root
        for member in members.dropLast() {
            guard let next = container.objectMember(named: member) else { return nil }
            container = next
        }
        guard let start = container.objectMemberStart(named: last) else { return nil }
        return (container, start)
    }

    public var description: String { members.isEmpty ? "(the whole document)" : members.joined(separator: ".") }
}
