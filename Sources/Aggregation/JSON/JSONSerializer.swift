import HTTPCore

/// Writes ``JSON`` as compact JSON text: no insignificant whitespace and never a raw line
/// break, so a document fits on one server-sent-events `data:` line. Strings are written by
/// HTTPCore's ``JSONWriter``, the service's one escaping rule.
extension JSON {
    /// The document as UTF-8 JSON text.
    public var serialized: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(max(256, serializedCountEstimate))
        write(to: &output)
        return output
    }

    /// Room enough for most documents' text, so that writing rarely grows the buffer (each
    /// growth allocates and copies all written so far): a kept object's text length, and for
    /// an array (a list answer: an array of kept objects) the sum of its elements' estimates.
    /// Nested arrays and objects are not walked twice for it; they count 16 bytes and any
    /// more is found by growing, as before.
    private var serializedCountEstimate: Int {
        switch self {
        case .raw(let raw): raw.textCount
        case .array(let elements):
            elements.reduce(2) { total, element in
                if case .raw(let raw) = element { return total + raw.textCount + 1 }
                return total + 16
            }
        default: 16
        }
    }

    /// Appends the document's JSON text to `output`.
    public func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): JSONWriter.appendString(text, to: &output)
        case .raw(let raw): raw.appendText(to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for index in elements.indices {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                // A kept object's text appended where it lies (a list answer's every item):
                // writing a copy of the element cost a retain and a release of its text.
                if case .raw(let raw) = elements[index] {
                    raw.appendText(to: &output)
                } else {
                    elements[index].write(to: &output)
                }
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONWriter.appendString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }
}
