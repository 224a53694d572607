public import Glibc

/// The bytes of HTTP/1.1's grammar (RFC 9110 §5.6), for what the server reads (request
/// framing, query strings) and what the upstream client sends and reads. They run for every
/// header byte: bit tables and word-at-a-time scans, no per-byte calls. Public and
/// `@inlinable`, so that the server's and the client's modules inline them into their loops
/// (as `package` they are called, not inlined, on every header byte).
public enum HTTPSyntax {
    /// A `tchar`: what a header name (and a token) is made of: ! # $ % & ' * + - . ^ _ ` | ~,
    /// digits and letters.
    ///
    /// A bit table in two words rather than a switch of ranges: bit `n` of the first says
    /// whether byte `n` (0x00–0x3F) is one, bit `n` of the second whether byte 0x40 + `n` is;
    /// no byte from 0x80 up is. Two comparisons and a shift for every header name byte.
    @inlinable @inline(__always)
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        let bits: UInt64 = byte < 0x40 ? 0x03FF_6CFA_0000_0000 : 0x57FF_FFFF_C7FF_FFFE
        return byte < 0x80 && (bits >> (byte & 0x3F)) & 1 != 0
    }

    /// The index of the first byte at or after `start` that is not a token byte
    /// (``isTokenByte(_:)``), or `bytes.count`: where a header name ends.
    ///
    /// Eight bytes at a time while eight remain (every header name of every upstream answer,
    /// and of every request head the client writes, passes here): most of a name's bytes are
    /// letters and hyphens, which a word of them passes with a few arithmetic operations
    /// (``notLettersOrHyphens(in:)``). The first byte of a word that is neither is checked on
    /// its own, and the scan steps over it when it is a token byte all the same (a digit, `_`).
    @inlinable @inline(__always)
    public static func endOfToken(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        guard let base = bytes.baseAddress else { return bytes.count }
        var index = max(start, 0)
        if let end = scanWords(bytes, from: &index, candidates: notLettersOrHyphens, stops: { !isTokenByte($0) }) { return end }
        while index < bytes.count {
            let byte = base.load(fromByteOffset: index, as: UInt8.self)
            // Letters first, with one comparison (`| 0x20` maps 'A'–'Z' onto 'a'–'z' and no
            // other byte onto them): most of a header name's bytes are letters.
            guard (byte | 0x20) &- 0x61 < 26 || isTokenByte(byte) else { break }
            index += 1
        }
        return index
    }

    /// The high bit of each byte of `word` that is neither an ASCII letter nor `-`, and of no
    /// other byte: each byte is tested on its own (``inRange(_:_:in:)``), so every mark is
    /// exact, not only the lowest.
    @inlinable @inline(__always)
    public static func notLettersOrHyphens(in word: UInt64) -> UInt64 {
        let low = word & ByteWords.repeating(0x7F)
        // `| 0x20` maps 'A'–'Z' onto 'a'–'z' and no other 7-bit value onto them.
        let letters = inRange(0x61, 0x7A, in: low | ByteWords.repeating(0x20))
        let hyphens = inRange(0x2D, 0x2D, in: low)
        return (~(letters | hyphens) | word) & ByteWords.repeating(0x80)
    }

    /// The high bit of each byte of `low` from `lowest` to `highest` (all of them below 0x80),
    /// for a `low` whose bytes are all below 0x80: adding `0x80 - limit` to such a byte sets
    /// its high bit exactly when it is at least `limit`, and never carries into the next byte.
    @inlinable @inline(__always)
    public static func inRange(_ lowest: UInt8, _ highest: UInt8, in low: UInt64) -> UInt64 {
        let atLeastLowest = low &+ ByteWords.repeating(0x80 - lowest)
        let aboveHighest = low &+ ByteWords.repeating(0x7F - highest)
        return atLeastLowest & ~aboveHighest & ByteWords.repeating(0x80)
    }

    /// A control byte other than HTAB: never part of a field value or reason phrase.
    @inlinable @inline(__always)
    public static func isForbiddenInValue(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// The index of the first byte at or after `start` that ``isForbiddenInValue(_:)``, or
    /// `bytes.count` when there is none: the end of a field value or reason phrase (its line
    /// end is such a byte), or the byte that makes it malformed.
    @inlinable @inline(__always)
    public static func firstForbiddenInValue(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        firstControlByte(in: bytes, from: start, where: isForbiddenInValue)
    }

    /// The index of the first byte at or after `start` for which `matches` holds, or
    /// `bytes.count`; `matches` must hold for control bytes only (below 0x20, or DEL).
    ///
    /// Eight bytes at a time: every header of every upstream answer and request is scanned
    /// for these, and most words hold no control byte, so a word passes with a few arithmetic
    /// operations. In a word that holds one, its lowest marked byte is the first control byte
    /// (``controlBytes(in:)``); one that `matches` does not (a tab, say) is stepped over.
    @inlinable @inline(__always)
    public static func firstControlByte(in bytes: UnsafeRawBufferPointer, from start: Int, where matches: (UInt8) -> Bool) -> Int {
        var index = max(start, 0)
        if let base = bytes.baseAddress {
            if let found = scanWords(bytes, from: &index, candidates: controlBytes, stops: matches) { return found }
            while index < bytes.count {
                if matches(base.load(fromByteOffset: index, as: UInt8.self)) { return index }
                index += 1
            }
        }
        return bytes.count
    }

    /// The word loop of the scans above: from `index`, eight bytes at a time while eight
    /// remain, for the first byte that `stops` the scan. `candidates` marks (the high bit of
    /// each byte) the bytes of a word that may stop it, never missing one; the lowest marked
    /// byte is checked on its own, and the scan goes on after it when it does not stop. The
    /// stopping byte's index, or nil with `index` at the fewer than eight bytes left.
    @inlinable @inline(__always)
    public static func scanWords(
        _ bytes: UnsafeRawBufferPointer, from index: inout Int, candidates: (UInt64) -> UInt64, stops: (UInt8) -> Bool
    ) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        while bytes.count - index >= 8 {
            let marks = candidates(ByteWords.load(bytes, at: index))
            guard marks != 0 else {
                index += 8
                continue
            }
            let position = index + marks.trailingZeroBitCount / 8
            if stops(base.load(fromByteOffset: position, as: UInt8.self)) { return position }
            index = position + 1
        }
        return nil
    }

    /// The high bit of each byte of `word` (read little-endian: its first byte lowest) that is
    /// below 0x20 or is DEL, and maybe of bytes after such a byte, never before it: so the
    /// lowest bit set marks the first control byte exactly, and no bit is set without one
    /// (``ByteWords``).
    @inlinable @inline(__always)
    public static func controlBytes(in word: UInt64) -> UInt64 {
        ByteWords.below(0x20, in: word) | ByteWords.equal(to: 0x7F, in: word)
    }

    /// Whether `bytes` spell `lowercase`, ASCII letters in either case (header names, tokens).
    /// Over raw bytes, not any collection: the response parser calls it for every header.
    @inlinable @inline(__always)
    public static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        // The length first: most names compared differ in it.
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if (byte &- 0x41 < 26 ? byte | 0x20 : byte) != expected[index] { return false }
        }
        return true
    }

    /// Whether two header names (or other ASCII words) are equal, ASCII letters in either
    /// case: without lowercased copies of either, as a request's `Vary` and an upstream
    /// answer's headers compare them.
    public static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { a in b.withUTF8 { b in equalsIgnoringCase(a, b) } }
    }

    /// The same comparison, over bytes already in hand.
    public static func equalsIgnoringCase(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        for index in a.indices where lowercased(a[index]) != lowercased(b[index]) { return false }
        return true
    }

    /// `byte` with an ASCII capital letter lowercased, any other byte as it is.
    @inlinable @inline(__always)
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// Whether `byte` is optional whitespace in a header value (RFC 9110 §5.6.3): a space or a tab.
    @inlinable @inline(__always)
    public static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    /// ``equalsIgnoringCase(_:_:)`` for a `token` already known to hold token bytes only, and
    /// a `lowercase` of letters and hyphens: eight bytes at a time. ORing 0x20 into a token byte
    /// gives a lowercase letter only from that letter in either case, and a hyphen only from a
    /// hyphen (CR, the one other byte it maps onto one, is no token byte). For the names the
    /// upstream client compares every header's name with.
    @inlinable @inline(__always)
    public static func tokenEqualsIgnoringCase(_ token: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        let count = lowercase.utf8CodeUnitCount
        guard token.count == count else { return false }
        guard count >= 8, let base = token.baseAddress else { return equalsIgnoringCase(token, lowercase) }
        let expected = UnsafeRawPointer(lowercase.utf8Start)
        var offset = 0
        while true {
            let word = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self) | ByteWords.repeating(0x20)
            guard word == expected.loadUnaligned(fromByteOffset: offset, as: UInt64.self) else { return false }
            if offset == count - 8 { return true }
            // The last word ends with the name, overlapping the one before.
            offset = min(offset + 8, count - 8)
        }
    }

    /// The value of a hex digit, or nil.
    @inlinable @inline(__always)
    public static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The index of the first `byte` in `bytes`, or nil (`memchr`).
    @inlinable @inline(__always)
    public static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + start, Int32(byte), bytes.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
