/// Checks, without building anything, that a value is valid JSON written exactly as the
/// serializer writes it (compact, no escapes, no raw U+2028 or U+2029), and finds its end.
///
/// Why it exists: an upstream object passed through as its text (``RawJSON``) needs its
/// members only when someone reads them, and most are never read (a list item is asked for
/// its id, a detail object for its member names; every value is then copied out as text).
/// Building each member's `String` and `JSON` and freeing them again cost most of a
/// request's parsing. The parser asks this scanner first; when the scan succeeds the object
/// is kept as text alone, and ``RawJSON`` reads members from it on demand.
///
/// The scanner accepts a subset of what ``JSONParser`` accepts, never more: it answers false
/// for anything irregular *or* invalid, and the parser then parses that object in full, so
/// malformed text is refused by the parser's own checks with its own errors and offsets.
/// Every check here (string bytes, UTF-8, number grammar, literals, nesting depth) mirrors
/// one in ``JSONParser``.
struct CanonicalJSONScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private(set) var position: Int
    private var depth: Int

    /// A scanner at `position` in `bytes`, inside `depth` open arrays and objects (the
    /// parser's depth, so the nesting limit is the parser's).
    init(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int, depth: Int) {
        self.bytes = bytes
        self.position = position
        self.depth = depth
    }

    /// Skips the value at ``position`` when it is valid and canonical; false, with
    /// ``position`` somewhere inside it, otherwise.
    private mutating func skipValue() -> Bool {
        guard position < bytes.count else { return false }
        switch bytes[position] {
        case UInt8(ascii: "{"): return skipObject()
        case UInt8(ascii: "["): return skipArray()
        case UInt8(ascii: "\""): return skipString()
        case UInt8(ascii: "t"): return skipLiteral("true")
        case UInt8(ascii: "f"): return skipLiteral("false")
        case UInt8(ascii: "n"): return skipLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return skipNumber()
        default: return false
        }
    }

    /// Skips the object at ``position`` (which must be `{`); see ``skipValue()``.
    mutating func skipObject() -> Bool {
        guard enter() else { return false }
        if isAt(UInt8(ascii: "}")) { return leave() }
        while true {
            guard skipMemberName(), skipValue() else { return false }
            if isAt(UInt8(ascii: ",")) { continue }
            return isAt(UInt8(ascii: "}")) && leave()
        }
    }

    /// Skips the member name at ``position`` (which must be `"`) and the `:` after it.
    private mutating func skipMemberName() -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\""), skipString() else { return false }
        return isAt(UInt8(ascii: ":"))
    }

    /// Steps over `byte` when it is the next one.
    private mutating func isAt(_ byte: UInt8) -> Bool {
        guard position < bytes.count, bytes[position] == byte else { return false }
        position += 1
        return true
    }

    private mutating func enter() -> Bool {
        depth += 1
        position += 1
        return depth <= JSONParser.maximumDepth
    }

    private mutating func leave() -> Bool {
        depth -= 1
        return true
    }

    private mutating func skipArray() -> Bool {
        guard enter() else { return false }
        if isAt(UInt8(ascii: "]")) { return leave() }
        while true {
            guard skipValue() else { return false }
            if isAt(UInt8(ascii: ",")) { continue }
            return isAt(UInt8(ascii: "]")) && leave()
        }
    }

    private mutating func skipLiteral(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        for index in 0..<count where bytes[position + index] != literal.utf8Start[index] { return false }
        position += count
        return true
    }

    /// JSON's number grammar, as ``JSONParser`` reads it: `-`? (`0` | [1-9][0-9]*)
    /// (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?.
    private mutating func skipNumber() -> Bool {
        _ = isAt(UInt8(ascii: "-"))
        guard position < bytes.count, Self.isDigit(bytes[position]) else { return false }
        if !isAt(UInt8(ascii: "0")) { skipDigits() }
        if isAt(UInt8(ascii: ".")) {
            guard skipDigits() > 0 else { return false }
        }
        if isAt(UInt8(ascii: "e")) || isAt(UInt8(ascii: "E")) {
            if !isAt(UInt8(ascii: "+")) { _ = isAt(UInt8(ascii: "-")) }
            guard skipDigits() > 0 else { return false }
        }
        return true
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = position
        while position < bytes.count, Self.isDigit(bytes[position]) { position += 1 }
        return position - start
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte &- UInt8(ascii: "0") < 10 }

    /// Skips the string at ``position`` (which must be `"`): no escape, no control character,
    /// valid UTF-8 without U+2028 or U+2029 (which the serializer escapes).
    private mutating func skipString() -> Bool {
        position += 1
        while true {
            position = JSONStringBytes.endOfPlainText(in: bytes, from: position)
            guard position < bytes.count else { return false }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return true
            }
            guard byte >= 0x80, skipMultiByteCharacter() else { return false }
        }
    }

    /// Skips one UTF-8 encoded character of two to four bytes, validating it as the standard
    /// does (Unicode table 3-7: no overlong form, no surrogate, nothing above U+10FFFF), and
    /// refusing U+2028 and U+2029.
    private mutating func skipMultiByteCharacter() -> Bool {
        let lead = bytes[position]
        let count: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: count = 2
        case 0xE0: count = 3; secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: count = 3
        case 0xED: count = 3; secondRange = 0x80...0x9F
        case 0xF0: count = 4; secondRange = 0x90...0xBF
        case 0xF1...0xF3: count = 4
        case 0xF4: count = 4; secondRange = 0x80...0x8F
        default: return false
        }
        guard position + count <= bytes.count, secondRange.contains(bytes[position + 1]) else { return false }
        for index in 2..<count where !(0x80...0xBF).contains(bytes[position + index]) { return false }
        if lead == 0xE2, bytes[position + 1] == 0x80, bytes[position + 2] == 0xA8 || bytes[position + 2] == 0xA9 { return false }
        position += count
        return true
    }
}
