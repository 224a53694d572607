import HTTPCore
import Testing

/// The service's one escaping rule for JSON strings (``JSONWriter``), pinned byte by byte:
/// every answer, error, stream-control reply and event is written with it.
@Suite("JSON writer: one escaping rule")
struct JSONWriterTests {
    private func written(_ text: String) -> String { JSONWriter.string(text) }

    @Test("quotes and backslashes are escaped with a backslash")
    func quotesAndBackslashes() {
        #expect(written(#"say "hi" \o/"#) == #""say \"hi\" \\o/""#)
    }

    @Test("line feed, carriage return and tab have their short escapes")
    func shortEscapes() {
        #expect(written("a\nb\rc\td") == #""a\nb\rc\td""#)
    }

    @Test("every other byte below 0x20 is \\u00XX in lowercase hex, and nothing below 0x20 is left raw")
    func controlBytes() {
        for value in UInt8(0)..<0x20 where ![0x09, 0x0A, 0x0D].contains(value) {
            let hex = String(value, radix: 16)
            let expected = #""\u00"# + (hex.count == 1 ? "0" : "") + hex + "\""
            #expect(written(String(decoding: [value], as: UTF8.self)) == expected, "byte \(value)")
        }
        let all = String(decoding: Array(UInt8(0)..<0x20), as: UTF8.self)
        #expect(!Array(written(all).utf8).contains { $0 < 0x20 })
    }

    @Test("U+2028 and U+2029 are escaped, so a document stays on one line for JavaScript and SSE readers")
    func lineAndParagraphSeparators() {
        #expect(written("a\u{2028}b\u{2029}c") == #""a\u2028b\u2029c""#)
    }

    @Test("their neighbours U+2027 and U+202A, other E2 sequences, DEL and non-ASCII text pass as UTF-8")
    func otherTextPasses() {
        for text in ["\u{2027}", "\u{202A}", "€", "\u{7F}", "é 漢字 🚀", "\u{FEFF}"] {
            #expect(written(text) == "\"" + text + "\"", "\(Array(text.utf8))")
        }
    }

    @Test("text decoded from a lone surrogate's bytes holds U+FFFD, and is written as valid UTF-8")
    func loneSurrogateBytes() {
        let decoded = String(decoding: [0x61, 0xED, 0xA0, 0x80, 0x62], as: UTF8.self)
        let output = written(decoded)
        #expect(output.unicodeScalars.contains("\u{FFFD}"))
        #expect(String(validating: Array(output.utf8), as: UTF8.self) != nil)
    }

    @Test("escapes at the very start and end of a string and back to back are all written")
    func escapesAtEdges() {
        #expect(written("\"") == #""\"""#)
        #expect(written("\u{2029}\n\u{2028}") == #""\u2029\n\u2028""#)
        #expect(written("") == #""""#)
    }

    @Test("an error body is {\"error\":{\"code\",\"message\"}} with both strings escaped by the same rule")
    func errorBody() {
        #expect(JSONWriter.error(code: "bad_request", message: "a \"q\"\u{2028}") ==
                #"{"error":{"code":"bad_request","message":"a \"q\"\u2028"}}"#)
    }

    @Test("an object of string members keeps their order")
    func objectOrder() {
        #expect(JSONWriter.object([("stream", "b"), ("accepted", "a")]) == #"{"stream":"b","accepted":"a"}"#)
    }
}
