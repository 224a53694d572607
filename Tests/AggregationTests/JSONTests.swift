import Aggregation
import Testing

@Suite("JSON")
struct JSONTests {
    private func roundTrip(_ text: String) throws -> String {
        String(decoding: try JSON(parsing: Array(text.utf8)).serialized, as: UTF8.self)
    }

    @Test("documents pass through unchanged: key order, number text, unicode")
    func passThrough() throws {
        let text = #"{"b":1,"a":[1.50,-0,2e10,true,false,null],"c":{"é":"Grüße ✓ 😀","empty":{}},"d":[]}"#
        #expect(try roundTrip(text) == text)
    }

    @Test("whitespace goes, escapes are normalized, control characters and line separators stay escaped")
    func normalizes() throws {
        #expect(try roundTrip(" { \"a\" : [ 1 , 2 ] } ") == #"{"a":[1,2]}"#)
        #expect(try roundTrip(#"["\u0041\n\t\"\\\/\u00e9\ud83d\ude00\u0001"]"#) == #"["A\n\t\"\\/é😀\u0001"]"#)
        #expect(try roundTrip(#"["\u2028\u2029"]"#) == #"["\u2028\u2029"]"#)
    }

    @Test("members are found by name, the first of repeated names wins")
    func lookup() throws {
        let document = try JSON(parsing: Array(#"{"result":{"items":[{"id":"x"}]},"dup":1,"dup":2}"#.utf8))
        #expect(JSONPath("result.items").value(in: document)?.arrayValue?.first?["id"] == .string("x"))
        #expect(JSONPath("").value(in: document) == document)
        #expect(JSONPath("result.missing").value(in: document) == nil)
        #expect(document["dup"] == .number("1"))
    }

    @Test("malformed text is refused with the byte offset", arguments: [
        "", "[1,]", "{\"a\" 1}", "01", "1.", "-", "[1] x", "\"\\x\"", "\"\u{1}\"", "tru", "{\"a\":1,}", "\"\\ud800\"", "[\"\\u12\"]",
    ])
    func refuses(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSON(parsing: Array(text.utf8)) }
    }

    @Test("invalid UTF-8 and hostile nesting are refused")
    func hostileInput() {
        #expect(throws: JSONParseError.self) { try JSON(parsing: [0x22, 0xFF, 0x22]) }
        let deep = Array(repeating: UInt8(ascii: "["), count: 10_000) + Array(repeating: UInt8(ascii: "]"), count: 10_000)
        #expect(throws: JSONParseError.self) { try JSON(parsing: deep) }
        let fine = Array(repeating: UInt8(ascii: "["), count: 500) + Array(repeating: UInt8(ascii: "]"), count: 500)
        #expect((try? JSON(parsing: fine)) != nil)
    }

    @Test("a snapshot's version names its content")
    func snapshotVersions() throws {
        let a = Snapshot(try JSON(parsing: Array(#"[{"x":1}]"#.utf8)))
        let b = Snapshot(try JSON(parsing: Array(#"[ {"x": 1} ]"#.utf8)))
        let c = Snapshot(try JSON(parsing: Array(#"[{"x":2}]"#.utf8)))
        #expect(a.version == b.version)
        #expect(a.version != c.version)
        #expect(a.version.count == 16)
    }
}
