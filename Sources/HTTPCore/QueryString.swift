/// `application/x-www-form-urlencoded` query strings and percent-decoding.
public enum QueryString {
    /// `a=1&b=x%20y` → `["a": "1", "b": "x y"]`; `+` decodes to a space; the last value of a
    /// repeated name wins; names without `=` map to an empty value.
    public static func parse(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in pairs(query) { result[name] = value }
        return result
    }

    /// `resource=a&resource=b&b.x=1` → `[("resource", "a"), ("resource", "b"), ("b.x", "1")]`:
    /// every pair, decoded as ``parse(_:)`` decodes them, in order, repeated names kept.
    public static func pairs(_ query: String) -> [(name: String, value: String)] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecoded(String(parts[0]), plusAsSpace: true) ?? String(parts[0])
            let value = parts.count > 1 ? (percentDecoded(String(parts[1]), plusAsSpace: true) ?? String(parts[1])) : ""
            return (name, value)
        }
    }

    /// Decodes `%XX` escapes; nil when an escape is malformed or the result is not UTF-8.
    public static func percentDecoded(_ text: String, plusAsSpace: Bool = false) -> String? {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) })
        else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(HTTPSyntax.hexValue), let low = iterator.next().flatMap(HTTPSyntax.hexValue)
                else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+") where plusAsSpace:
                bytes.append(UInt8(ascii: " "))
            default:
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Percent-encodes everything but RFC 3986 unreserved characters, so the result is one
    /// path segment or one query value whatever it contains (`/`, `..`, `?`, `#`, `%`).
    public static func percentEncoded(_ text: String) -> String {
        // Over the contiguous bytes: an id is checked once per upstream call, and walking the
        // string's UTF-8 view byte by byte cost ten times as much.
        var contiguous = text
        return contiguous.withUTF8 { bytes in
            let count = percentEncodedCount(bytes)
            guard count != bytes.count else { return text }
            return String(unsafeUninitializedCapacity: count) { writePercentEncoded(bytes, into: $0) }
        }
    }

    /// How many bytes ``writePercentEncoded(_:into:)`` writes for `bytes`: three for each
    /// byte that is not unreserved, one for the others.
    public static func percentEncodedCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var count = bytes.count
        for byte in bytes where !isUnreserved(byte) { count += 2 }
        return count
    }

    /// Writes `bytes` percent-encoded (as ``percentEncoded(_:)``) at the start of `output`,
    /// which has room for at least ``percentEncodedCount(_:)`` bytes; returns how many it
    /// wrote. For callers that build a path around the encoded bytes in one allocation.
    public static func writePercentEncoded(_ bytes: UnsafeBufferPointer<UInt8>, into output: UnsafeMutableBufferPointer<UInt8>) -> Int {
        // Room for everything encoded (what callers usually give) passes at once, anything
        // less is counted: past this check every write below is in bounds.
        precondition(output.count >= 3 * bytes.count || output.count >= percentEncodedCount(bytes), "no room for the encoded bytes")
        // Every detail call encodes its id here, too often for byte by byte with checked
        // subscripts: so through the base pointers, eight bytes at a time while eight remain
        // and eight fit. A word is copied whole, then the bytes from its
        // first that is not a letter, digit, `-` or `.` (``notAlphanumericDashOrDot(in:)``)
        // on are written again: that byte on its own, the scan going on after it.
        // `index` stays below `bytes.count`; `written` is what `bytes[..<index]` encodes to, so
        // the check above leaves room for the next byte's encoding, and a word is stored
        // only where eight bytes fit.
        guard let source = bytes.baseAddress, let target = output.baseAddress else { return 0 }
        var index = 0
        var written = 0
        while bytes.count - index >= 8 && output.count - written >= 8 {
            let word = UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)
            UnsafeMutableRawPointer(target + written).storeBytes(of: word, as: UInt64.self)
            let marks = notAlphanumericDashOrDot(in: UInt64(littleEndian: word))
            guard marks != 0 else {
                index += 8
                written += 8
                continue
            }
            let copied = marks.trailingZeroBitCount / 8
            written += copied + writeEncoded(source[index + copied], at: target + written + copied)
            index += copied + 1
        }
        // Fewer than eight left (a UUID's last four): when the input's last word holds only
        // bytes copied as they are, it is stored whole, ending where the output ends. Its bytes
        // before `index` were written one for one just before, so they are written again the
        // same; the store ends within the room the check above leaves.
        let lastWord = bytes.count - 8
        if index < bytes.count && lastWord >= 0 && index > lastWord {
            let word = UnsafeRawPointer(source + lastWord).loadUnaligned(as: UInt64.self)
            if notAlphanumericDashOrDot(in: UInt64(littleEndian: word)) == 0 {
                UnsafeMutableRawPointer(target + written - (index - lastWord)).storeBytes(of: word, as: UInt64.self)
                return written + bytes.count - index
            }
        }
        while index < bytes.count {
            written += writeEncoded(source[index], at: target + written)
            index += 1
        }
        return written
    }

    /// Writes one byte at `target`, percent-encoded unless it is unreserved; returns how many
    /// bytes that took (1 or 3).
    @inline(__always)
    private static func writeEncoded(_ byte: UInt8, at target: UnsafeMutablePointer<UInt8>) -> Int {
        if isUnreserved(byte) {
            target[0] = byte
            return 1
        }
        target[0] = UInt8(ascii: "%")
        target[1] = upperHexDigit(byte >> 4)
        target[2] = upperHexDigit(byte & 0xF)
        return 3
    }

    /// The high bit of each byte of `word` that is not an ASCII letter, digit, `-` or `.`, and
    /// of no other byte (each byte tested on its own, ``HTTPSyntax/inRange(_:_:in:)``): the
    /// unreserved bytes but `_` and `~`, which are rare in ids and left to the byte-wise check.
    @inline(__always)
    static func notAlphanumericDashOrDot(in word: UInt64) -> UInt64 {
        let low = word & ByteWords.repeating(0x7F)
        let letters = HTTPSyntax.inRange(0x61, 0x7A, in: low | ByteWords.repeating(0x20))
        // `-` `.` `/` `0`–`9`, without `/`.
        let dashDotDigits = HTTPSyntax.inRange(0x2D, 0x39, in: low) & ~HTTPSyntax.inRange(0x2F, 0x2F, in: low)
        return (~(letters | dashDotDigits) | word) & ByteWords.repeating(0x80)
    }

    private static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), as bits of two masks: one
    /// shift and test per byte, for ids that are encoded on every upstream call.
    @inline(__always)
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        // The mask is chosen without a branch; no byte from 128 up is unreserved.
        let mask = byte < 64 ? unreservedBelow64 : unreservedFrom64
        return byte < 128 && (mask >> UInt64(byte & 63)) & 1 == 1
    }

    /// `-` (45), `.` (46), `0`–`9` (48–57).
    private static let unreservedBelow64: UInt64 = 0x03FF_6000_0000_0000
    /// `A`–`Z` (65–90), `_` (95), `a`–`z` (97–122), `~` (126).
    private static let unreservedFrom64: UInt64 = 0x47FF_FFFE_87FF_FFFE
}
