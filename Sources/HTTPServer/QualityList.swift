import HTTPCore

/// The entries of a header such as `Accept` or `Accept-Encoding` (RFC 9110 §12.4.2): values
/// separated by commas, each with parameters after `;`, its weight `q` (1 when not given).
///
/// ```swift
/// QualityList.entries("gzip;q=0, br, *;q=0.5")   // [("gzip", 0), ("br", 1), ("*", 0.5)]
/// QualityList.allowsGzip("gzip;q=0")            // false
/// ```
///
/// A value is compared by its bytes, spaces and tabs left out and ASCII letters lowercased, as
/// a header's bytes are tokens (RFC 9110 §5.6.2): no Unicode case folding, and a comma is a
/// comma whatever follows it. ``allowsGzip(_:)``, which every JSON answer asks, reads the
/// header's bytes without making a `String` per entry: browsers, `curl --compressed` and
/// Python's `http.client` all send `Accept-Encoding`, and a split into strings, each filtered
/// and lowercased, cost some 15,000 instructions for `identity` alone, 5 % of a whole N=10
/// `/groups` request.
public enum QualityList {
    /// Each entry's value, lower-cased and without spaces, and its weight, from 0 to 1. A `q`
    /// that is not a number (`nan` included) is taken as 1, as a value without one; a number
    /// outside 0…1 (`-1`, `1e308`) is clamped into it.
    public static func entries(_ header: String) -> [(value: String, quality: Double)] {
        var entries: [(value: String, quality: Double)] = []
        forEachEntry(in: header) { value, parameters in
            entries.append((String(decoding: normalized(value), as: UTF8.self), weight(parameters)))
            return false
        }
        return entries
    }

    /// Whether an `Accept-Encoding` header allows a gzip answer (RFC 9110 §12.5.3): `gzip` (or
    /// `x-gzip`) weighted above 0, or when neither is named, `*` weighted above 0. No header:
    /// no (a client that sends none may not expect a coding it did not ask for). One pass.
    public static func allowsGzip(_ acceptEncoding: String?) -> Bool {
        guard let acceptEncoding else { return false }
        var named: Double?
        var any: Double?
        forEachEntry(in: acceptEncoding) { value, parameters in
            if equals(value, "gzip") || equals(value, "x-gzip") {
                named = weight(parameters)
                return true
            }
            if any == nil && equals(value, "*") { any = weight(parameters) }
            return false
        }
        return (named ?? any).map { $0 > 0 } ?? false
    }

    /// Calls `body` with each entry's value (its bytes before any `;`, as written) and its
    /// parameters (the bytes after that `;`), in order, until `body` returns true. Entries
    /// whose value is empty or only spaces and tabs are skipped, as commas with nothing
    /// between them.
    private static func forEachEntry(
        in header: String, _ body: (_ value: UnsafeRawBufferPointer, _ parameters: UnsafeRawBufferPointer) -> Bool
    ) {
        var header = header
        header.withUTF8 { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            var start = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.count
                let semicolon = bytes[start..<end].firstIndex(of: UInt8(ascii: ";")) ?? end
                let value = UnsafeRawBufferPointer(rebasing: bytes[start..<semicolon])
                if value.contains(where: { !HTTPSyntax.isWhitespace($0) }) {
                    let parameters = UnsafeRawBufferPointer(rebasing: bytes[min(semicolon + 1, end)..<end])
                    if body(value, parameters) { return }
                }
                start = end + 1
            }
        }
    }

    /// The weight the first `q=` parameter gives, from 0 to 1; 1 without one, or when it is
    /// not a number.
    private static func weight(_ parameters: UnsafeRawBufferPointer) -> Double {
        var start = 0
        while start < parameters.count {
            let end = parameters[start...].firstIndex(of: UInt8(ascii: ";")) ?? parameters.count
            let parameter = normalized(parameters[start..<end])
            if parameter.starts(with: [UInt8(ascii: "q"), UInt8(ascii: "=")]) {
                guard let given = Double(String(decoding: parameter.dropFirst(2), as: UTF8.self)), !given.isNaN else { return 1 }
                return min(max(given, 0), 1)
            }
            start = end + 1
        }
        return 1
    }

    /// The bytes as they are compared: spaces and tabs left out, ASCII letters lowercased.
    private static func normalized(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        bytes.filter { !HTTPSyntax.isWhitespace($0) }.map(HTTPSyntax.lowercased)
    }

    /// Whether `value` is `name` (lowercase, no spaces) once normalized, without making a copy.
    private static func equals(_ value: UnsafeRawBufferPointer, _ name: StaticString) -> Bool {
        name.withUTF8Buffer { name in
            var matched = 0
            for byte in value where !HTTPSyntax.isWhitespace(byte) {
                guard matched < name.count, HTTPSyntax.lowercased(byte) == name[matched] else { return false }
                matched += 1
            }
            return matched == name.count
        }
    }
}
