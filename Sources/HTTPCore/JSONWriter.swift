/// The one way Tributary writes JSON text, and its one escaping rule: every answer, error,
/// stream-control reply and server-sent event goes through ``appendString(_:to:)``, whether
/// the document is an aggregated answer (Aggregation's `JSON`) or a few members written here.
///
/// The rule, for a string's text (RFC 8259 §7):
/// - `"` and `\` are escaped as `\"` and `\\`;
/// - line feed, carriage return and tab as `\n`, `\r`, `\t`; every other byte below 0x20 as
///   `\u00XX` (lowercase hex);
/// - U+2028 and U+2029 as `\u2028` and `\u2029`: valid in JSON, but line terminators to
///   JavaScript before ES2019, and a document must fit on one SSE `data:` line for any reader;
/// - everything else as its UTF-8, DEL and non-ASCII included. A Swift `String` holds no lone
///   surrogate (text decoded from invalid UTF-8 holds U+FFFD instead), so the output is
///   always valid UTF-8.
///
/// ```swift
/// var text: [UInt8] = []
/// JSONWriter.appendObject([("stream", "1f3a…"), ("accepted", "loadMore")], to: &text)
/// // {"stream":"1f3a…","accepted":"loadMore"}
/// ```
public enum JSONWriter {
    /// Appends `text` as a JSON string literal, quotes included.
    public static func appendString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                // One comparison for most bytes: printable ASCII other than `"` and `\`.
                if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != 0xE2 {
                    index += 1
                    continue
                }
                let length: Int
                if byte == 0xE2 {
                    // U+2028 is E2 80 A8, U+2029 is E2 80 A9; other E2 sequences pass as they are.
                    guard index + 2 < bytes.count, bytes[index + 1] == 0x80, bytes[index + 2] & 0xFE == 0xA8 else {
                        index += 1
                        continue
                    }
                    length = 3
                } else {
                    length = 1
                }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                appendEscape(of: byte == 0xE2 ? bytes[index + 2] : byte, isLineSeparator: byte == 0xE2, to: &output)
                index += length
                runStart = index
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<bytes.count]))
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The escape of one byte below 0x20, `"` or `\`, or (`isLineSeparator`) of U+2028 (`byte`
    /// A8) or U+2029 (A9).
    private static func appendEscape(of byte: UInt8, isLineSeparator: Bool, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\\"))
        if isLineSeparator {
            output.append(contentsOf: byte == 0xA8 ? "u2028".utf8 : "u2029".utf8)
            return
        }
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(byte)
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            output.append(contentsOf: "u00".utf8)
            output.append(hexDigit(byte >> 4))
            output.append(hexDigit(byte & 0xF))
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// `text` as a JSON string literal, quotes included, as text.
    public static func string(_ text: String) -> String {
        var output: [UInt8] = []
        appendString(text, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `{"name":"value",…}`: an object of string members, in the order given.
    public static func appendObject(_ members: [(name: String, value: String)], to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            appendString(member.name, to: &output)
            output.append(UInt8(ascii: ":"))
            appendString(member.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// `{"name":"value",…}` as text.
    public static func object(_ members: [(name: String, value: String)]) -> String {
        var output: [UInt8] = []
        appendObject(members, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// `{"error":{"code":"…","message":"…"}}`: the body of every error the service answers.
    public static func error(code: String, message: String) -> String {
        var output: [UInt8] = []
        output.append(contentsOf: #"{"error":"#.utf8)
        appendObject([("code", code), ("message", message)], to: &output)
        output.append(UInt8(ascii: "}"))
        return String(decoding: output, as: UTF8.self)
    }
}
