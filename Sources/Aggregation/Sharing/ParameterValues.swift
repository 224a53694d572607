/// The values of a resource's parameters that one request asked for, e.g. `team=core,
/// status=open`, ordered by name so that equal values compare and hash equal whatever order
/// the request named them in. Part of the ``SharingKey``: a document of team `a` never
/// answers team `b`.
public struct ParameterValues: Hashable, Sendable, CustomStringConvertible {
    /// The parameters, by name in ascending order, each with its value.
    public let entries: [Entry]

    public struct Entry: Hashable, Sendable {
        public let name: String
        public let value: String
    }

    /// A resource without parameters.
    public static let none = ParameterValues([:])

    public init(_ values: [String: String]) {
        entries = values.sorted { $0.key < $1.key }.map { Entry(name: $0.key, value: $0.value) }
    }

    public subscript(name: String) -> String? {
        entries.first { $0.name == name }?.value
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// The values by name.
    public var dictionary: [String: String] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.value) })
    }

    /// `team=core,status=open` (empty for none): for log lines and messages.
    public var description: String { entries.map { "\($0.name)=\($0.value)" }.joined(separator: ",") }
}
