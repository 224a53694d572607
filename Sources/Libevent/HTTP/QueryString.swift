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
        // Writes go unchecked below: room for everything encoded (what callers usually give)
        // passes at once, anything less is counted.
        precondition(output.count >= 3 * bytes.count || output.count >= percentEncodedCount(bytes), "no room for the encoded bytes")
        var written = 0
        for byte in bytes {
            if isUnreserved(byte) {
                output[written] = byte
                written += 1
            } else {
                output[written] = UInt8(ascii: "%")
                output[written + 1] = upperHexDigit(byte >> 4)
                output[written + 2] = upperHexDigit(byte & 0xF)
                written += 3
            }
        }
        return written
    }

    private static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`), as bits of two masks: one
    /// shift and test per byte, for ids that are encoded on every upstream call.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case 0..<64: (unreservedBelow64 >> UInt64(byte)) & 1 == 1
        case 64..<128: (unreservedFrom64 >> UInt64(byte - 64)) & 1 == 1
        default: false
        }
    }

    /// `-` (45), `.` (46), `0`–`9` (48–57).
    private static let unreservedBelow64: UInt64 = 0x03FF_6000_0000_0000
    /// `A`–`Z` (65–90), `_` (95), `a`–`z` (97–122), `~` (126).
    private static let unreservedFrom64: UInt64 = 0x47FF_FFFE_87FF_FFFE
}
