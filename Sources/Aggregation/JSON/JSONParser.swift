/// Parses JSON text (RFC 8259) into ``JSON``, strictly: one value, no trailing commas, no
/// comments, valid UTF-8 and escapes, numbers in JSON's grammar, nesting at most
/// ``JSONParser/maximumDepth`` deep (so hostile input cannot exhaust the stack), and at most
/// ``JSONParser/workingMemoryLimit(forInputBytes:)`` bytes allocated for the values it builds
/// (so hostile input cannot exhaust the memory either).
extension JSON {
    /// Parses `bytes`; with `keepingObjectText`, each object whose text is already what the
    /// serializer would write (compact, no escapes) comes back as ``JSON/raw(_:)``, holding
    /// `bytes` and the object's offsets in it (no copy), so writing the document again copies
    /// that text instead of serializing the object. A pipeline that passes upstream objects through (or splices
    /// them, as ``ListResource/merge(_:details:)`` does) saves most of its serializing.
    /// Such an object's members are mostly not built at all: ``RawJSON`` reads those asked
    /// for from its text (see ``CanonicalJSONScanner``).
    public init(parsing bytes: [UInt8], keepingObjectText: Bool) throws(JSONParseError) {
        self = try JSON(parsing: bytes, keeping: keepingObjectText ? .objects : .none)
    }

    /// Which objects of a parsed document keep their text (``JSON/raw(_:)``).
    public enum KeptText: Sendable {
        /// None: every object is built member by member.
        case none
        /// Every object whose text is what the serializer would write.
        case objects
        /// As ``objects``, except the document's own object, which is parsed member by member
        /// (its members kept with its text): for a document whose members are all read, as a
        /// list's is for its items. Kept as text alone, the list was read twice, once by the
        /// scan that checked it and once more to find each item's end; parsed so, each item is
        /// scanned once and kept as it is found.
        case objectsInsideTheDocument
    }

    /// Parses `bytes`, keeping the text of the objects `kept` says (see
    /// ``init(parsing:keepingObjectText:)``). Any `kept` gives the same document, or refuses
    /// `bytes` with the same error, with one exception: text whose values need more memory
    /// than a parse may allocate (``JSONParseError/exceedsWorkingMemory``) may be accepted when
    /// objects keep their text, since those are not built; reading their members later is
    /// bounded alike (per read), and costs at most what the full parse would have.
    public init(parsing bytes: [UInt8], keeping kept: KeptText) throws(JSONParseError) {
        guard kept != .none else {
            self = try JSON(parsing: bytes)
            return
        }
        self = try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) in
            // An object at offset 0 is the document's own.
            var firstScanned = kept == .objects ? 0 : 1
            if firstScanned == 0, let document = Self.keptWhole(buffer, of: bytes, failingAt: &firstScanned) { return document }
            var parser = JSONParser(buffer, keepingObjectTextOf: bytes, scanningFrom: firstScanned)
            return try parser.parseDocument()
        }
    }

    /// The document when it is one canonical object from its first byte (whitespace after it
    /// allowed), kept as its text, as the parser would keep it, without setting up a parser: an
    /// upstream's detail answer mostly is. Otherwise nil,
    /// and `failedAt` set past the byte where the scan failed, as the parser sets its
    /// ``JSONParser/scansObjectsFrom`` after a failed scan (so the object is then parsed in
    /// full, not scanned twice); left as it is when the scan succeeded (text after the object:
    /// the parser scans it again and reports it).
    private static func keptWhole(_ buffer: UnsafeBufferPointer<UInt8>, of bytes: [UInt8], failingAt failedAt: inout Int) -> JSON? {
        guard buffer.first == UInt8(ascii: "{"), UInt32(exactly: buffer.count) != nil else { return nil }
        var scanner = CanonicalJSONScanner(buffer, at: 0, depth: 0)
        guard scanner.skipObject() else {
            failedAt = scanner.position + 1
            return nil
        }
        var end = scanner.position
        while end < buffer.count, JSONParser.isWhitespace(buffer[end]) { end += 1 }
        guard end == buffer.count else { return nil }
        return RawJSON(source: bytes, range: 0..<scanner.position, members: nil).map(JSON.raw)
    }

    public init(parsing bytes: some Collection<UInt8>) throws(JSONParseError) {
        let result: Result<JSON, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            var parser = JSONParser(buffer)
            return Result { () throws(JSONParseError) in try parser.parseDocument() }
        }
        if let result {
            self = try result.get()
        } else {
            let copy = Array(bytes)
            self = try copy.withUnsafeBufferPointer { buffer throws(JSONParseError) in
                var parser = JSONParser(buffer)
                return try parser.parseDocument()
            }
        }
    }
}

/// Why JSON text could not be parsed, and where (a byte offset).
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) at byte \(offset)" }

    /// Whether the text was refused for the memory its values needed (more than
    /// ``JSONParser/workingMemoryLimit(forInputBytes:)``), not for its syntax: keeping
    /// objects as text, which are then not built, may accept it.
    public var exceedsWorkingMemory: Bool { reason.hasPrefix(Self.workingMemoryReason) }

    static let workingMemoryReason = "building its values needs more memory than the limit of"
}

struct JSONParser {
    static let maximumDepth = 512

    /// What one parse may allocate for the values it builds, per byte of its input (the
    /// whole body, also when a kept object's members are read from it later). As counted
    /// (``workingMemoryLimit(forInputBytes:)``), per byte of text: a list of objects kept as
    /// text needs 32 to 64 bytes per object (a `JSON` is 32 bytes, and an array grows by
    /// doubling), a pretty-printed document a few bytes, a list of 5-digit numbers 11 to 21.
    /// Tiny values need more, and are refused sooner: `[[],[],…]` 21 to 43, `[1,1,…]` 32 to
    /// 64, `[[1],[1],…]` 56 to 72. Unbounded, an 8 MiB body of `[[1],[1],…]` grew the process
    /// by 440 MiB.
    static let workingBytesPerInputByte = 32
    /// Room for any small document, whose fixed costs outweigh its bytes.
    static let minimumWorkingBytes = 64 * 1024
    /// The most one parse may allocate, whatever the input's size.
    static let maximumWorkingBytes = 64 * 1024 * 1024

    /// The bytes a parse of `count` bytes may allocate for the values it builds: the
    /// allocations counted are every array's and object's buffers (each growth of one counted
    /// whole, as a bound of what it holds at its peak) and every string and number too long
    /// to be stored inline; beyond, the parse fails.
    static func workingMemoryLimit(forInputBytes count: Int) -> Int {
        min(maximumWorkingBytes, minimumWorkingBytes + min(count, maximumWorkingBytes) * workingBytesPerInputByte)
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var depth = 0
    /// What the parse may still allocate (``workingMemoryLimit(forInputBytes:)``).
    private var allowance: Int
    /// The array `bytes` points into, when objects keep their text (as ranges of it).
    private let source: [UInt8]?
    /// How many places so far hold text the serializer would write differently (whitespace
    /// between tokens, an escape, a raw U+2028 or U+2029): an object whose parse did not
    /// raise it is in canonical form, and its text can stand for it.
    private var irregularities = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
        source = nil
        allowance = Self.workingMemoryLimit(forInputBytes: bytes.count)
    }

    /// Where the next object may be scanned (``CanonicalJSONScanner``) and kept as text alone,
    /// its members read from the text when asked: objects from here on. After a scan fails at
    /// some byte (an irregularity or an error), only objects starting past it are scanned, so
    /// no byte is in two scans, and objects around it are parsed in full as before: text that
    /// nests a failure deep cannot make every enclosing object scan its prefix again (a
    /// document costs at most one scan and one full parse).
    /// `Int.max` when objects do not keep their text (or their offsets would not fit).
    private var scansObjectsFrom = Int.max

    /// Whether `bytes` is known to be canonical already (a ``RawJSON``'s text being read):
    /// each object is then kept as its text, its end found by ``CanonicalTextReader``
    /// without checking it again.
    private var textIsCanonical = false

    /// A parser whose objects keep their text when it is canonical: `bytes` must point into
    /// `source`. Objects before `firstScanned` are parsed in full (their text kept with their
    /// members, as any object the scan cannot keep).
    init(_ bytes: UnsafeBufferPointer<UInt8>, keepingObjectTextOf source: [UInt8], scanningFrom firstScanned: Int = 0) {
        self.bytes = bytes
        self.source = source
        allowance = Self.workingMemoryLimit(forInputBytes: bytes.count)
        if UInt32(exactly: bytes.count) != nil { scansObjectsFrom = firstScanned }
    }

    /// A parser for the value or members at `position` in the text of a ``RawJSON``, which
    /// is canonical: `bytes` must point into `source`. Its objects are kept as text.
    init(_ bytes: UnsafeBufferPointer<UInt8>, readingCanonicalTextOf source: [UInt8], at position: Int) {
        self.bytes = bytes
        self.source = source
        self.position = position
        allowance = Self.workingMemoryLimit(forInputBytes: bytes.count)
        textIsCanonical = true
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard position == bytes.count else { throw error("unexpected text after the document") }
        return value
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: position, reason: reason)
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    @inline(__always)
    private mutating func skipWhitespace() {
        guard position < bytes.count, Self.isWhitespace(bytes[position]) else { return }
        irregularities += 1
        position += 1
        while position < bytes.count, Self.isWhitespace(bytes[position]) { position += 1 }
    }

    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private mutating func expect(_ literal: StaticString, _ value: JSON) throws(JSONParseError) -> JSON {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw error("unexpected end of input") }
        for index in 0..<count where bytes[position + index] != literal.utf8Start[index] {
            throw error("invalid literal")
        }
        position += count
        return value
    }

    mutating func parseValue() throws(JSONParseError) -> JSON {
        guard let byte = current else { throw error("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error("unexpected character")
        }
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw error("nesting deeper than \(Self.maximumDepth)") }
    }

    // MARK: - Working memory

    /// Counts `bytes` about to be allocated against the allowance.
    @inline(__always)
    private mutating func charge(_ bytes: Int) throws(JSONParseError) {
        allowance -= bytes
        guard allowance >= 0 else { throw overAllowance() }
    }

    private func overAllowance() -> JSONParseError {
        error(JSONParseError.workingMemoryReason + " \(Self.workingMemoryLimit(forInputBytes: bytes.count)) bytes")
    }

    /// Counts the buffer `elements` grows into at its next append when it is full: twice its
    /// capacity, as the standard library grows arrays (its old buffer is freed after; counted
    /// as it is, every growth before included, the sum bounds what the array holds at its
    /// peak).
    @inline(__always)
    private mutating func chargeGrowth<Element>(of elements: [Element]) throws(JSONParseError) {
        guard elements.count == elements.capacity else { return }
        try charge(Self.bufferBytes(2 * elements.capacity, of: Element.self))
    }

    /// An array buffer of `capacity` elements: its header and its elements.
    @inline(__always)
    private static func bufferBytes<Element>(_ capacity: Int, of _: Element.Type) -> Int {
        32 + capacity * MemoryLayout<Element>.stride
    }

    /// Counts a `String` of `count` UTF-8 bytes: nothing when it is stored inline (up to 15).
    @inline(__always)
    private mutating func chargeText(_ count: Int) throws(JSONParseError) {
        if count > 15 { try charge(32 + count) }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSON {
        let start = position
        if textIsCanonical, let source {
            var reader = CanonicalTextReader(bytes, at: start)
            reader.skipValue()
            if let raw = RawJSON(source: source, range: start..<reader.position, members: nil) {
                position = reader.position
                return .raw(raw)
            }
        }
        if start >= scansObjectsFrom, let source {
            var scanner = CanonicalJSONScanner(bytes, at: start, depth: depth)
            if scanner.skipObject(), let raw = RawJSON(source: source, range: start..<scanner.position, members: nil) {
                position = scanner.position
                return .raw(raw)
            }
            // Irregular or malformed: parsed in full below (which reports any error as before).
            scansObjectsFrom = scanner.position + 1
        }
        let irregularitiesBefore = irregularities
        let members = try parseMembers()
        return object(members, from: start, irregularitiesBefore: irregularitiesBefore)
    }

    /// The members of the object at `position` (its `{`), each parsed in full; the objects
    /// inside are kept as text when they can be.
    mutating func parseMembers() throws(JSONParseError) -> [(key: String, value: JSON)] {
        try enter()
        position += 1
        var members: [(key: String, value: JSON)] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
            depth -= 1
            return members
        }
        // Room for the few members most objects have: growing from empty allocates at 1, 2
        // and 4 members.
        try charge(Self.bufferBytes(4, of: (key: String, value: JSON).self))
        members.reserveCapacity(4)
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
            position += 1
            skipWhitespace()
            let value = try parseValue()
            try chargeGrowth(of: members)
            members.append((key, value))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                depth -= 1
                return members
            default: throw error("expected ',' or '}'")
            }
        }
    }

    /// The object just parsed (from `start` to `position`), with its text when objects keep
    /// it and nothing in it would be serialized differently.
    private func object(_ members: [(key: String, value: JSON)], from start: Int, irregularitiesBefore: Int) -> JSON {
        guard let source, irregularities == irregularitiesBefore,
              let raw = RawJSON(source: source, range: start..<position, members: members) else { return .object(members) }
        return .raw(raw)
    }

    private mutating func parseArray() throws(JSONParseError) -> JSON {
        try enter()
        position += 1
        var elements: [JSON] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            depth -= 1
            return .array(elements)
        }
        // As for members: growing from empty allocates at 1, 2, 4 and 8 elements. The same
        // room wherever the array is and whoever reads it (a parse of the whole body, or a
        // kept object's members read later), so reading a value of a document costs no more
        // memory than parsing it in full did, and is never refused where that was not.
        try charge(Self.bufferBytes(4, of: JSON.self))
        elements.reserveCapacity(4)
        while true {
            skipWhitespace()
            let element = try parseValue()
            try chargeGrowth(of: elements)
            elements.append(element)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "]"):
                position += 1
                depth -= 1
                return .array(elements)
            default: throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        position += 1
        let start = position
        // Fast path: no escapes. ASCII text needs no validation, so it skips
        // `String(validating:as:)`, whose generic code looks up type metadata on every call
        // (most member names and ids are ASCII; the rest is validated as before).
        var nonASCII: UInt8 = 0
        while true {
            position = JSONStringBytes.endOfPlainText(in: bytes, from: position)
            guard position < bytes.count else { break }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<position])
                try chargeText(slice.count)
                position += 1
                if nonASCII < 0x80 { return String(decoding: slice, as: UTF8.self) }
                if source != nil, Self.containsLineOrParagraphSeparator(slice) { irregularities += 1 }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    position = start
                    throw error("invalid UTF-8 in a string")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in a string") }
            nonASCII |= byte
            position += 1
        }
        guard position < bytes.count else { throw error("unterminated string") }
        irregularities += 1
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                // The decoded bytes, then the string made of them.
                try charge(Self.bufferBytes(decoded.capacity, of: UInt8.self))
                try chargeText(decoded.count)
                guard let text = String(validating: decoded, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard let escape = current else { throw error("unterminated string") }
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"): try appendUnicodeEscape(to: &decoded)
                default: throw error("invalid escape")
                }
            case 0..<0x20:
                throw error("control character in a string")
            default:
                decoded.append(byte)
                position += 1
            }
        }
        throw error("unterminated string")
    }

    /// Whether UTF-8 `text` holds U+2028 or U+2029, which the serializer escapes.
    private static func containsLineOrParagraphSeparator(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index + 2 < text.count {
            if text[index] == 0xE2, text[index + 1] == 0x80, text[index + 2] == 0xA8 || text[index + 2] == 0xA9 { return true }
            index += 1
        }
        return false
    }

    private mutating func hexQuad() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw error("unterminated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private mutating func appendUnicodeEscape(to decoded: inout [UInt8]) throws(JSONParseError) {
        var scalarValue = try hexQuad()
        if (0xD800...0xDBFF).contains(scalarValue) {
            guard position + 2 <= bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                throw error("unpaired surrogate")
            }
            position += 2
            let low = try hexQuad()
            guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate") }
            scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalarValue) {
            throw error("unpaired surrogate")
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw error("invalid \\u escape") }
        decoded.append(contentsOf: String(Character(scalar)).utf8)
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = position
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw error("invalid number") }
        if first == UInt8(ascii: "0") {
            position += 1
        } else {
            skipDigits()
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard skipDigits() > 0 else { throw error("invalid number") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard skipDigits() > 0 else { throw error("invalid number") }
        }
        try chargeText(position - start)
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = position
        while position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
        return position - start
    }
}
