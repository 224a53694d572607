/// One operation of an RFC 6902 JSON Patch, as ``JSONDiff`` makes them: the four that turn
/// one document into another (`test` and `copy` are never needed for that). Paths are JSON
/// Pointers (RFC 6901) already in their text form (``JSONPointer``).
///
/// ```swift
/// JSONPatch.serialized([.replace(path: "/7/taskCount", value: .integer(999))])
/// // [{"op":"replace","path":"/7/taskCount","value":999}]
/// ```
public enum JSONPatchOperation: Sendable, Equatable {
    case add(path: String, value: JSON)
    case remove(path: String)
    case replace(path: String, value: JSON)
    /// Removes the value at `from`, then adds it at `path` (whose array index counts without it).
    case move(from: String, path: String)

    /// `{"op":…,"path":…}` with `from` or `value` where the operation has one.
    public var json: JSON {
        switch self {
        case .add(let path, let value): .object([("op", .string("add")), ("path", .string(path)), ("value", value)])
        case .remove(let path): .object([("op", .string("remove")), ("path", .string(path))])
        case .replace(let path, let value): .object([("op", .string("replace")), ("path", .string(path)), ("value", value)])
        case .move(let from, let path): .object([("op", .string("move")), ("from", .string(from)), ("path", .string(path))])
        }
    }
}

/// A whole patch as the text an event carries.
public enum JSONPatch {
    /// The operations as a JSON array, compact (one line, as an event's data wants it).
    public static func serialized(_ operations: [JSONPatchOperation]) -> [UInt8] {
        JSON.array(operations.map(\.json)).serialized
    }
}
