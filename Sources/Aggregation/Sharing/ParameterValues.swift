/// The values of a resource's parameters that one request asked for, e.g. `team=core,
/// status=open`, ordered by name so that equal values compare and hash equal whatever order
/// the request named them in. Part of the ``SharingKey``: a document of team `a` never
/// answers team `b`, nor a value of team `K` (the Kelvin sign) team `K`: values compare by
/// their bytes, exactly as they are sent upstream.
public struct ParameterValues: Hashable, Sendable, CustomStringConvertible {
    /// The parameters, by name in ascending order, each with its value.
    public let entries: [Entry]

    /// Compared and hashed by its bytes (``ExactText``): `K` and the Kelvin sign are two
    /// values, two pipelines, as they are two different upstream calls.
    public struct Entry: Hashable, Sendable {
        public let name: String
        public let value: String

        public static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.name.utf8.elementsEqual(rhs.name.utf8) && lhs.value.utf8.elementsEqual(rhs.value.utf8)
        }

        public func hash(into hasher: inout Hasher) {
            ExactText.hash(name, into: &hasher)
            ExactText.hash(value, into: &hasher)
        }
    }

    /// A resource without parameters.
    public static let none = ParameterValues([:])

    public init(_ values: [String: String]) {
        entries = values.sorted { Self.precedes($0.key, $1.key) }.map { Entry(name: $0.key, value: $0.value) }
    }

    /// Entries already in ``precedes(_:_:)``'s order of their names, each name once.
    init(sorted entries: [Entry]) {
        self.entries = entries
    }

    /// The order of entries: by name.
    static func precedes(_ name: String, _ other: String) -> Bool {
        name < other
    }

    public subscript(name: String) -> String? {
        entries.first { $0.name.utf8.elementsEqual(name.utf8) }?.value
    }

    public var isEmpty: Bool { entries.isEmpty }

    /// Whether these values hold every one of `given`, each byte for byte (its other values
    /// may be anything): the pipelines an aimed reload (`POST /groups/reload?team=core`)
    /// refreshes. Every value holds ``none``.
    ///
    /// ```swift
    /// ParameterValues(["team": "core", "status": "open"]).holds(ParameterValues(["team": "core"]))   // true
    /// ParameterValues(["team": "K"]).holds(ParameterValues(["team": "\u{212A}"]))                  // false
    /// ```
    public func holds(_ given: ParameterValues) -> Bool {
        given.entries.allSatisfy { entries.contains($0) }
    }

    /// The values by name.
    public var dictionary: [String: String] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.name, $0.value) })
    }

    /// `team=core,status=open` (empty for none): for log lines and messages.
    public var description: String { entries.map { "\($0.name)=\($0.value)" }.joined(separator: ",") }
}
