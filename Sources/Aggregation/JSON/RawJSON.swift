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
    /// `ArraySlice` went through the generic `append(contentsOf:)`, for every kept object
    /// written (most of a `/groups` answer's serializing).
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

    /// The members: those the parser built, or read from the text now, which then costs what
    /// a parse of them costs, within the same working-memory limit
    /// (``JSONParser/workingMemoryLimit(forInputBytes:)``, of ``source``'s size): none when
    /// they need more.
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

    /// The member named `key` (the first, if repeated) when it is an object, as its text: what
    /// ``member(named:)`` finds, without a `JSON` around it or a `Lookup` on the way. A detail
    /// answer's `result` is read so for every item it is merged into. Nil when the member is
    /// missing or not an object, or this object's members were parsed (``member(named:)``
    /// then tells which).
    func objectMember(named key: String) -> RawJSON? {
        guard let valueStart = objectMemberStart(named: key) else { return nil }
        return source.withUnsafeBufferPointer { buffer -> RawJSON? in
            // As ``plainValue(in:of:at:)`` reads an object.
            var reader = CanonicalTextReader(buffer, at: valueStart)
            reader.skipValue()
            return RawJSON(source: source, range: valueStart..<reader.position, members: nil)
        }
    }

    /// Where the member named `key` (the first, if repeated) starts in ``source`` when it is
    /// an object (its `{`); nil as for ``objectMember(named:)``.
    func objectMemberStart(named key: String) -> Int? {
        guard parsedMembers == nil else { return nil }
        return source.withUnsafeBufferPointer { buffer -> Int? in
            guard case .some(.some(let valueStart)) = memberValueStart(named: key, in: buffer), valueStart < buffer.count,
                  buffer[valueStart] == UInt8(ascii: "{") else { return nil }
            return valueStart
        }
    }

    /// Where this object's text starts in ``source`` (its `{`).
    var textStart: Int { Int(start) }

    /// Whether `other` has a member named as one of this object's; nil unless both read their
    /// members from their text and this object has at most 16. Compared in place, without
    /// building any member (``compareNames(in:at:with:)``).
    func sharesMemberName(with other: RawJSON) -> Bool? {
        guard parsedMembers == nil, other.parsedMembers == nil else { return nil }
        switch other.source.withUnsafeBufferPointer({ Self.compareNames(in: $0, at: Int(other.start), with: self) }) {
        case .shared: return true
        case .disjoint: return false
        case .unreadable: return nil
        }
    }

    /// This object (an item) with the object whose `{` is at `position` in `container`'s text
    /// (its details) spliced after it, when none of the details' member names is one of this
    /// object's: what ``ListResource/merge(_:details:)`` makes of the two (this object alone
    /// when the details are `{}`, the details alone when this object is). The details' text is
    /// read once, by the walk that compares the names, which also finds its end (not once for
    /// its end and again for its names), and copied from where it lies, without a `RawJSON`
    /// of its own. Nil when a name is shared, or either object's members are not read from its
    /// text, or this one has more than 16 (``sharesMemberName(with:)`` and ``member(named:)``
    /// then tell), or the splice is too long for a `RawJSON`.
    func splicingObjectSharingNoName(at position: Int, of container: RawJSON) -> JSON? {
        guard parsedMembers == nil, container.parsedMembers == nil else { return nil }
        return container.source.withUnsafeBufferPointer { buffer -> JSON? in
            guard case .disjoint(let end) = Self.compareNames(in: buffer, at: position, with: self) else { return nil }
            if end - position == 2 { return .raw(self) }
            if textCount == 2 { return RawJSON(source: container.source, range: position..<end, members: nil).map(JSON.raw) }
            // As ``splicing(_:_:)``: `{item` + `,` + `details}`, in one allocation.
            var output: [UInt8] = []
            output.reserveCapacity(textCount + end - position)
            source.withUnsafeBufferPointer { own in
                output.append(contentsOf: UnsafeBufferPointer(rebasing: own[Int(start)..<Int(self.end) - 1]))
            }
            output.append(UInt8(ascii: ","))
            output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[position + 1..<end]))
            return RawJSON(splicedText: output).map(JSON.raw)
        }
    }

    /// This object without its first member named `key`, in a text of its own (a copy of its
    /// text when it has no such member): an item of a batch answer as the details of a list
    /// item, without the id the merge would drop anyway (the list's members win), so that the
    /// merge is a splice and the details no longer hold the whole answer. Read in place,
    /// without building a member. Nil when its members are not read from its text, or the
    /// text cannot be read so (the caller then builds the members).
    func textWithoutMember(named key: String) -> RawJSON? {
        guard parsedMembers == nil else { return nil }
        let found = key.utf8.withContiguousStorageIfAvailable { keyBytes in
            source.withUnsafeBufferPointer { buffer -> [UInt8]? in
                let name = MemberName(keyBytes)
                var cut: Range<Int>?
                var reader = CanonicalTextReader(buffer, at: Int(start) + 1)
                if !reader.isAt(UInt8(ascii: "}")) {
                    // Where the value before the current member ends: at the `,` before it.
                    var previousEnd: Int?
                    repeat {
                        let memberStart = reader.position
                        guard let memberName = reader.memberName() else { return nil }
                        reader.skipValue()
                        if cut == nil, MemberName(UnsafeBufferPointer(rebasing: buffer[memberName])) == name {
                            // `,"id":…` after another member; `"id":…,` when it comes first.
                            if let previousEnd {
                                cut = previousEnd..<reader.position
                            } else {
                                let comma = reader.position < buffer.count && buffer[reader.position] == UInt8(ascii: ",")
                                cut = memberStart..<reader.position + (comma ? 1 : 0)
                            }
                        }
                        previousEnd = reader.position
                    } while reader.isAt(UInt8(ascii: ","))
                    guard reader.isAt(UInt8(ascii: "}")), reader.position == Int(end) else { return nil }
                }
                var output: [UInt8] = []
                output.reserveCapacity(textCount - (cut?.count ?? 0))
                if let cut {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[Int(start)..<cut.lowerBound]))
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[cut.upperBound..<Int(end)]))
                } else {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[Int(start)..<Int(end)]))
                }
                return output
            }
        }
        guard case .some(.some(let text)) = found else { return nil }
        return RawJSON(splicedText: text)
    }

    /// What comparing two objects' member names found.
    private enum NameComparison {
        case shared
        /// No name shared; the other object's text ends at `otherEnd` (past its `}`).
        case disjoint(otherEnd: Int)
        /// A text that cannot be read so, or an object of more than 16 names.
        case unreadable
    }

    /// Compares the names of the object whose `{` is at `otherStart` in `otherBuffer` with
    /// `object`'s: `object`'s names are noted (their ranges, on the stack), then each of the
    /// other's is compared with them, so each text is read once. Two plain loops over
    /// ``CanonicalTextReader``; the names compared by ``namesAreEqual(_:_:)``, which tells most
    /// different names apart by their first bytes.
    private static func compareNames(
        in otherBuffer: UnsafeBufferPointer<UInt8>, at otherStart: Int, with object: RawJSON
    ) -> NameComparison {
        object.source.withUnsafeBufferPointer { buffer -> NameComparison in
            withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: 16) { names -> NameComparison in
                var count = 0
                var reader = CanonicalTextReader(buffer, at: Int(object.start) + 1)
                if !reader.isAt(UInt8(ascii: "}")) {
                    repeat {
                        // A 17th name is more than the stack holds.
                        guard count < names.count, let name = reader.memberName() else { return .unreadable }
                        names.initializeElement(at: count, to: name)
                        count += 1
                        reader.skipValue()
                    } while reader.isAt(UInt8(ascii: ","))
                    guard reader.isAt(UInt8(ascii: "}")) else { return .unreadable }
                }
                guard otherStart < otherBuffer.count, otherBuffer[otherStart] == UInt8(ascii: "{") else { return .unreadable }
                var otherReader = CanonicalTextReader(otherBuffer, at: otherStart + 1)
                if otherReader.isAt(UInt8(ascii: "}")) { return .disjoint(otherEnd: otherReader.position) }
                repeat {
                    guard let otherName = otherReader.memberName() else { return .unreadable }
                    let candidate = UnsafeBufferPointer(rebasing: otherBuffer[otherName])
                    for index in 0..<count where Self.namesAreEqual(UnsafeBufferPointer(rebasing: buffer[names[index]]), candidate) {
                        return .shared
                    }
                    otherReader.skipValue()
                } while otherReader.isAt(UInt8(ascii: ","))
                return otherReader.isAt(UInt8(ascii: "}")) ? .disjoint(otherEnd: otherReader.position) : .unreadable
            }
        }
    }

    /// Whether two member names (valid UTF-8 without escapes) are equal as `String`s are:
    /// the same bytes are; two ASCII names are only then; others compare as strings, whose
    /// equality is Unicode's canonical equivalence (U+212A KELVIN SIGN equals `K`).
    ///
    /// The common case, different names, is told from their first bytes when both are
    /// ASCII and differ: an ASCII character has no decomposition and is a starter, so every
    /// canonically equivalent form of a name begins with it (and an empty name equals only
    /// an empty one). Checking both names for ASCII first cost most of the merge's compares.
    private static func namesAreEqual(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        if a.count == b.count, a.elementsEqual(b) { return true }
        guard let first = a.first, let otherFirst = b.first else { return false }
        if first < 0x80, otherFirst < 0x80, first != otherFirst { return false }
        guard !isASCII(a) || !isASCII(b) else { return false }
        return String(decoding: a, as: UTF8.self) == String(decoding: b, as: UTF8.self)
    }

    private static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var union: UInt8 = 0
        for byte in bytes { union |= byte }
        return union < 0x80
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

    /// Lends `body` the bytes of the member named `key` (the first, if repeated) when it is a
    /// string read from the text: its UTF-8, without escapes, as the `String` that
    /// ``member(named:)`` makes would hold. Nil when the member is missing or not a string, or
    /// the object cannot be read so (``member(named:)`` then reads it). An item's id only
    /// becomes a path: lent in place, it costs no `String` per item.
    public func withStringMember<Result>(named key: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        guard parsedMembers == nil else { return nil }
        return source.withUnsafeBufferPointer { buffer -> Result? in
            guard case .some(.some(let valueStart)) = memberValueStart(named: key, in: buffer), valueStart < buffer.count,
                  buffer[valueStart] == UInt8(ascii: "\"") else { return nil }
            // As ``plainValue(in:of:at:)`` reads a string: canonical text has no escapes.
            let end = JSONStringBytes.nextQuote(in: buffer, from: valueStart + 1)
            guard end < buffer.count else { return nil }
            return body(UnsafeBufferPointer(rebasing: buffer[valueStart + 1..<end]))
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
        source.withUnsafeBufferPointer { buffer -> Lookup in
            switch memberValueStart(named: key, in: buffer) {
            case .some(.some(let valueStart)):
                if let value = Self.plainValue(in: buffer, of: source, at: valueStart) { return .found(value) }
                var parser = JSONParser(buffer, readingCanonicalTextOf: source, at: valueStart)
                guard let value = try? parser.parseValue() else { return .unreadable }
                return .found(value)
            case .some(.none): return .missing
            case .none: return .unreadable
            }
        }
    }

    /// ``memberValueStart(named:in:)`` for a key given as a `String`, whose bytes are read
    /// where they are: `withUTF8` needs a mutable copy of the key (a retain and a release of
    /// its storage per item). Nil (unreadable) when they are not contiguous.
    @inline(__always)
    private func memberValueStart(named key: String, in buffer: UnsafeBufferPointer<UInt8>) -> Int?? {
        key.utf8.withContiguousStorageIfAvailable { memberValueStart(named: MemberName($0), in: buffer) } ?? nil
    }

    /// The string or object at `position` in canonical `buffer` (which points into `source`),
    /// read as ``JSONParser`` reads canonical text, without setting up a parser: the values
    /// most read from kept objects are an item's id and a detail answer's `result` object.
    /// A string there has no escapes and is valid UTF-8 (checked when the body was read, also
    /// in a splice of such texts), so its bytes between the quotes are its text; an object
    /// is kept as its text. Nil for other values (and an object whose offsets do not fit),
    /// which the parser reads.
    private static func plainValue(in buffer: UnsafeBufferPointer<UInt8>, of source: [UInt8], at position: Int) -> JSON? {
        guard position < buffer.count else { return nil }
        switch buffer[position] {
        case UInt8(ascii: "\""):
            let end = JSONStringBytes.nextQuote(in: buffer, from: position + 1)
            guard end < buffer.count else { return nil }
            return .string(String(decoding: UnsafeBufferPointer(rebasing: buffer[position + 1..<end]), as: UTF8.self))
        case UInt8(ascii: "{"):
            var reader = CanonicalTextReader(buffer, at: position)
            reader.skipValue()
            return RawJSON(source: source, range: position..<reader.position, members: nil).map(JSON.raw)
        default:
            return nil
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
