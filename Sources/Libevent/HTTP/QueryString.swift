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
        guard !contiguous.withUTF8({ $0.allSatisfy(isUnreserved) }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            if isUnreserved(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
