/// Finds its way through JSON text already known to be valid and canonical (the text of a
/// ``RawJSON``, which ``CanonicalJSONScanner`` checked, or a splice of such texts): where a
/// member's name is, where a value ends.
///
/// Why it exists: reading one member of a kept object (a list item's id, the `result` of a
/// detail answer) must step over the members before it. Checking their text again, as the
/// scanner did once when the body arrived, would double what reading costs; in canonical text
/// a string is the bytes up to the next `"` (there are no escapes) and a nested value ends at
/// its matching bracket, so stepping over needs no more than that.
///
/// It never reads outside `bytes`. Given text that is not canonical it gives wrong offsets,
/// never a crash; the callers then fail to read (``RawJSON`` falls back to parsing in full).
struct CanonicalTextReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) {
        self.bytes = bytes
        self.position = position
    }

    /// Steps over `byte` when it is the next one.
    mutating func isAt(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    /// The member name at ``position`` (its bytes between the quotes), stepping over it and
    /// the `:` after it; nil when there is none.
    mutating func memberName() -> Range<Int>? {
        guard isAt(UInt8(ascii: "\"")) else { return nil }
        let start = position
        skipStringBody()
        let end = position - 1
        guard end >= start, isAt(UInt8(ascii: ":")) else { return nil }
        return start..<end
    }

    /// Steps over the value at ``position``.
    mutating func skipValue() {
        guard position < bytes.count else { return }
        switch bytes[position] {
        case UInt8(ascii: "\""):
            position += 1
            skipStringBody()
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            skipContainer()
        default:
            // A number or a literal: up to the delimiter after it.
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"): return
                default: position += 1
                }
            }
        }
    }

    /// Steps over the object or array at ``position``: up to its matching bracket, stepping
    /// over strings whole (a bracket inside one is text).
    private mutating func skipContainer() {
        var depth = 0
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                skipStringBody()
                continue
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                if depth == 0 {
                    position += 1
                    return
                }
            default: break
            }
            position += 1
        }
    }

    /// Steps over a string's bytes after its opening quote, and its closing quote.
    private mutating func skipStringBody() {
        position = JSONStringBytes.nextQuote(in: bytes, from: position)
        if position < bytes.count { position += 1 }
    }
}
