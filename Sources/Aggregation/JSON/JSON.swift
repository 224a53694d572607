/// A JSON document as upstreams send it and clients receive it: objects keep their key
/// order and numbers keep their exact text, so what passes through Tributary comes out
/// unchanged (`1.50` stays `1.50`, `{"b":1,"a":2}` keeps `b` first).
///
/// ```swift
/// let document = try JSON(parsing: Array(#"{"result":[{"id":"a"}]}"#.utf8))
/// let items = document["result"]?.arrayValue        // [{"id":"a"}]
/// let text = JSON.array(items!).serialized           // [{"id":"a"}]
/// ```
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number as its JSON text (validated by the parser), e.g. `"12"`, `"-1.5e3"`.
    case number(String)
    case string(String)
    case array([JSON])
    /// Members in document order. Duplicate keys are kept as sent; lookups take the first.
    case object([(key: String, value: JSON)])
    /// An object together with its JSON text exactly as this type serializes it: written out
    /// by copying the text, not by serializing the tree again. Everything else (lookups,
    /// equality, ``kindDescription``) sees the object it holds (``RawJSON/value``). Only
    /// ``init(parsing:keepingObjectText:)`` and code that splices such texts make one; code
    /// that matches `case .object` must read ``objectValue`` instead to see both.
    case raw(RawJSON)

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.raw(let a), .raw(let b)): a.text == b.text || a.value == b.value
        case (.raw(let a), .object): a.value == rhs
        case (.object, .raw(let b)): lhs == b.value
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: false
        }
    }

    /// The member named `key` of an object (the first, if repeated), else nil.
    public subscript(key: String) -> JSON? {
        if case .raw(let raw) = self { return raw.member(named: key) }
        guard let members = objectValue else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var arrayValue: [JSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    public var objectValue: [(key: String, value: JSON)]? {
        if case .object(let members) = self { return members }
        if case .raw(let raw) = self { return raw.members }
        return nil
    }

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The kind of value, for error messages ("expected an array, found a string").
    public var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        case .raw: "an object"
        }
    }

    /// A number given as an integer.
    public static func integer(_ value: some BinaryInteger) -> JSON { .number(String(value)) }
}
