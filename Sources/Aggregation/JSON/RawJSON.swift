/// An object's JSON text that needs no serializing, and its members: see ``JSON/raw(_:)``.
///
/// The text is a range of an upstream's body (no copy) or of a splice of such texts, and must
/// be byte for byte what ``JSON/write(to:)`` writes for ``value``: compact, no escapes other
/// than the serializer's own. The parser keeps only texts that are (an object with whitespace
/// or an escape inside stays a plain ``JSON/object(_:)``, serialized as before).
///
/// Most kept objects carry no members, only their text (checked by ``CanonicalJSONScanner``):
/// ``member(named:)`` and ``members`` read them from it when asked, so an object whose text
/// is only copied out never builds its members. Reading is not cached: code that reads many
/// members of one object should take ``members`` once.
///
/// Stored as the whole buffer and two offsets rather than an `ArraySlice`, and the members as
/// their array rather than a `JSON`, so the enum case needs no box of its own and `JSON` stays
/// small: every kept object would otherwise cost an allocation.
public struct RawJSON: Sendable {
    private let source: [UInt8]
    private let start: UInt32
    private let end: UInt32
    /// The members, when the text's maker had them (the parser, for an object it parsed in
    /// full); nil when they are read from the text.
    private let parsedMembers: [(key: String, value: JSON)]?

    /// The object whose text is `source[range]`; `members` must be what that text parses to,
    /// or nil when the text is canonical (as ``CanonicalJSONScanner`` checks, or a splice of
    /// such texts) and they are to be read from it. Nil when the range does not fit the
    /// compact offsets (bodies over 4 GiB).
    init?(source: [UInt8], range: Range<Int>, members: [(key: String, value: JSON)]?) {
        guard let start = UInt32(exactly: range.lowerBound), let end = UInt32(exactly: range.upperBound) else { return nil }
        self.source = source
        self.start = start
        self.end = end
        parsedMembers = members
    }

    /// The object whose text is `text`, which must be an object written as the serializer
    /// writes it (a splice of kept texts); its members are read from it when asked for.
    public init?(splicedText text: [UInt8]) {
        self.init(source: text, range: 0..<text.count, members: nil)
    }

    public var text: ArraySlice<UInt8> { source[Int(start)..<Int(end)] }

    public var members: [(key: String, value: JSON)] {
        if let parsedMembers { return parsedMembers }
        return source.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(buffer, readingCanonicalTextOf: source, at: Int(start))
            return (try? parser.parseMembers()) ?? []
        }
    }

    public var value: JSON { .object(members) }

    /// The member named `key` (the first, if repeated), as ``JSON/subscript(_:)`` finds it
    /// in ``members``; read from the text, it builds only that member's value.
    public func member(named key: String) -> JSON? {
        if parsedMembers == nil {
            switch memberFromText(named: key) {
            case .found(let value): return value
            case .missing: return nil
            case .unreadable: break
            }
        }
        return members.first { $0.key == key }?.value
    }

    /// Whether `other` has a member named as one of this object's; nil unless both read their
    /// members from their text and this object has at most 16. Compared in place, without
    /// building any member: each of this object's names against each of `other`'s, so the
    /// work is at most 16 readings of `other`'s text.
    func sharesMemberName(with other: RawJSON) -> Bool? {
        guard parsedMembers == nil, other.parsedMembers == nil else { return nil }
        return source.withUnsafeBufferPointer { buffer -> Bool? in
            other.source.withUnsafeBufferPointer { otherBuffer -> Bool? in
                var reader = CanonicalTextReader(buffer, at: Int(start) + 1)
                if reader.isAt(UInt8(ascii: "}")) { return false }
                var count = 0
                repeat {
                    count += 1
                    guard count <= 16, let name = reader.memberName() else { return nil }
                    switch other.memberValueStart(named: UnsafeBufferPointer(rebasing: buffer[name]), in: otherBuffer) {
                    case .some(.some): return true
                    case .some(.none): break
                    case .none: return nil
                    }
                    reader.skipValue()
                } while reader.isAt(UInt8(ascii: ","))
                return reader.isAt(UInt8(ascii: "}")) ? false : nil
            }
        }
    }

    /// What reading a member from the text found.
    private enum Lookup {
        case found(JSON)
        case missing
        /// The text could not be read so (never for a text this type was made with); the
        /// caller then parses ``members``.
        case unreadable
    }

    private func memberFromText(named key: String) -> Lookup {
        var key = key
        return key.withUTF8 { keyBytes -> Lookup in
            source.withUnsafeBufferPointer { buffer -> Lookup in
                switch memberValueStart(named: keyBytes, in: buffer) {
                case .some(.some(let valueStart)):
                    var parser = JSONParser(buffer, readingCanonicalTextOf: source, at: valueStart)
                    guard let value = try? parser.parseValue() else { return .unreadable }
                    return .found(value)
                case .some(.none): return .missing
                case .none: return .unreadable
                }
            }
        }
    }

    /// Where the value of the first member named `name` starts in `buffer` (this object's
    /// ``source``): `.some(nil)` when there is no such member, nil when the text cannot be
    /// read so.
    private func memberValueStart(named name: UnsafeBufferPointer<UInt8>, in buffer: UnsafeBufferPointer<UInt8>) -> Int?? {
        var reader = CanonicalTextReader(buffer, at: Int(start) + 1)
        if reader.isAt(UInt8(ascii: "}")) { return .some(nil) }
        repeat {
            guard let candidate = reader.memberName() else { return nil }
            if Self.name(UnsafeBufferPointer(rebasing: buffer[candidate]), equals: name) { return reader.position }
            reader.skipValue()
        } while reader.isAt(UInt8(ascii: ","))
        return reader.isAt(UInt8(ascii: "}")) ? .some(nil) : nil
    }

    /// Whether two member names (valid UTF-8 without escapes) are equal as `String`s are:
    /// ASCII names byte for byte, others as strings, whose equality is Unicode's canonical
    /// equivalence (U+212A KELVIN SIGN equals `K`).
    private static func name(_ a: UnsafeBufferPointer<UInt8>, equals b: UnsafeBufferPointer<UInt8>) -> Bool {
        if isASCII(a), isASCII(b) {
            guard a.count == b.count else { return false }
            for index in 0..<a.count where a[index] != b[index] { return false }
            return true
        }
        return String(decoding: a, as: UTF8.self) == String(decoding: b, as: UTF8.self)
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var union: UInt8 = 0
        for byte in bytes { union |= byte }
        return union < 0x80
    }
}
