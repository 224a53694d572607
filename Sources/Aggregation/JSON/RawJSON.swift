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
    init?(splicedText text: [UInt8]) {
        self.init(source: text, range: 0..<text.count, members: nil)
    }

    public var text: ArraySlice<UInt8> { source[Int(start)..<Int(end)] }

    /// The length of ``text`` in bytes.
    var textCount: Int { Int(end - start) }

    /// Appends ``text`` to `output` as one copy of contiguous bytes: appending the
    /// `ArraySlice` went through the generic `append(contentsOf:)` (~1k instructions per kept
    /// object written, most of a `/groups` answer's serializing).
    func appendText(to output: inout [UInt8]) {
        source.withUnsafeBufferPointer { buffer in
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[Int(start)..<Int(end)]))
        }
    }

    /// `{first…,second…}`: two objects' texts as one object, `second`'s members after
    /// `first`'s (neither may be empty, `{}`). Written into one allocation of the exact size,
    /// each part copied from contiguous bytes (slices went through the generic append).
    static func splicing(_ first: RawJSON, _ second: RawJSON) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(first.textCount + second.textCount)
        first.source.withUnsafeBufferPointer { buffer in
            // Without its closing brace: `{a` + `,` + `b}`.
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[Int(first.start)..<Int(first.end) - 1]))
        }
        output.append(UInt8(ascii: ","))
        second.source.withUnsafeBufferPointer { buffer in
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[Int(second.start) + 1..<Int(second.end)]))
        }
        return output
    }

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
    /// building any member: this object's names are noted (on the stack), then each of
    /// `other`'s is compared with them, so each text is read once.
    func sharesMemberName(with other: RawJSON) -> Bool? {
        guard parsedMembers == nil, other.parsedMembers == nil else { return nil }
        return source.withUnsafeBufferPointer { buffer -> Bool? in
            other.source.withUnsafeBufferPointer { otherBuffer -> Bool? in
                withUnsafeTemporaryAllocation(of: MemberName.self, capacity: 16) { names -> Bool? in
                    var count = 0
                    // Stopped: a 17th name, more than the stack holds.
                    let noted = Self.walkMembers(of: buffer, from: Int(start)) { name, _ in
                        guard count < names.count else { return true }
                        names.initializeElement(at: count, to: name)
                        count += 1
                        return false
                    }
                    guard noted == false else { return nil }
                    return Self.walkMembers(of: otherBuffer, from: Int(other.start)) { name, _ in
                        (0..<count).contains { names[$0] == name }
                    }
                }
            }
        }
    }

    /// Walks the members of the object whose `{` is at `objectStart` in `buffer`, in order:
    /// `visit` gets each one's name and where its value starts, and says whether to stop
    /// there. Whether a visit stopped; nil when the text cannot be read so.
    private static func walkMembers(
        of buffer: UnsafeBufferPointer<UInt8>, from objectStart: Int, _ visit: (MemberName, Int) -> Bool
    ) -> Bool? {
        var reader = CanonicalTextReader(buffer, at: objectStart + 1)
        if reader.isAt(UInt8(ascii: "}")) { return false }
        repeat {
            guard let name = reader.memberName() else { return nil }
            if visit(MemberName(UnsafeBufferPointer(rebasing: buffer[name])), reader.position) { return true }
            reader.skipValue()
        } while reader.isAt(UInt8(ascii: ","))
        return reader.isAt(UInt8(ascii: "}")) ? false : nil
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
                switch memberValueStart(named: MemberName(keyBytes), in: buffer) {
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
    private func memberValueStart(named name: MemberName, in buffer: UnsafeBufferPointer<UInt8>) -> Int?? {
        var valueStart: Int?
        let found = Self.walkMembers(of: buffer, from: Int(start)) { candidate, position in
            guard candidate == name else { return false }
            valueStart = position
            return true
        }
        guard found != nil else { return nil }
        return .some(valueStart)
    }

    /// A member name's UTF-8 bytes (valid, without escapes), compared as `String`s compare:
    /// ASCII names byte for byte, others as strings, whose equality is Unicode's canonical
    /// equivalence (U+212A KELVIN SIGN equals `K`).
    private struct MemberName: Equatable {
        let bytes: UnsafeBufferPointer<UInt8>
        let isASCII: Bool

        init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            var union: UInt8 = 0
            for byte in bytes { union |= byte }
            isASCII = union < 0x80
        }

        static func == (a: MemberName, b: MemberName) -> Bool {
            if a.isASCII, b.isASCII {
                guard a.bytes.count == b.bytes.count else { return false }
                for index in 0..<a.bytes.count where a.bytes[index] != b.bytes[index] { return false }
                return true
            }
            return String(decoding: a.bytes, as: UTF8.self) == String(decoding: b.bytes, as: UTF8.self)
        }
    }
}
