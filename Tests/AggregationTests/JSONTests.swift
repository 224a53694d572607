import Aggregation
import HTTPCore
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

    @Test("a document's strings are written by the service's one rule (JSONWriter) and parse back to the same text")
    func oneEscapingRule() throws {
        var texts = ["", "plain", "\u{2028}\u{2029}", "quote \" backslash \\", "\u{7F}é🚀", "\u{FFFD}"]
        texts += (UInt8(0)..<0x20).map { String(decoding: [0x61, $0, 0x62], as: UTF8.self) }
        for text in texts {
            let serialized = JSON.object([(key: text, value: .string(text))]).serialized
            var expected: [UInt8] = [UInt8(ascii: "{")]
            JSONWriter.appendString(text, to: &expected)
            expected.append(UInt8(ascii: ":"))
            JSONWriter.appendString(text, to: &expected)
            expected.append(UInt8(ascii: "}"))
            #expect(serialized == expected, "\(Array(text.utf8))")
            #expect(try JSON(parsing: serialized)[text] == .string(text))
        }
    }

    @Test("an escaped lone surrogate is refused, high or low, so no document carries one")
    func loneSurrogateEscapes() {
        for text in [#"["\ud800"]"#, #"["\udc00"]"#, #"["\ud800x"]"#, #"["\ud800\u0041"]"#] {
            #expect(throws: (any Error).self, "\(text)") { try JSON(parsing: Array(text.utf8)) }
        }
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

    @Test("objects that keep their text write the same bytes as the tree, and equal it", arguments: [
        #"{"b":1,"a":[1.50,-0,2e10,true,false,null],"c":{"é":"Grüße ✓ 😀","empty":{}},"d":[]}"#,
        #" { "a" : [ 1 , {"x" :2} ], "b":{"y":[]} } "#,
        #"{"a":{"s":"\u0041\n\/"},"b":{"s":"plain"},"c":{"\u2028":1},"d":{"k":""# + "\u{2029}" + #""}}"#,
        #"[{"id":"x"},{ "id":"y"},{}]"#,
    ])
    func keptText(_ text: String) throws {
        let bytes = Array(text.utf8)
        let tree = try JSON(parsing: bytes)
        let kept = try JSON(parsing: bytes, keepingObjectText: true)
        #expect(kept.serialized == tree.serialized)
        #expect(kept == tree)
        #expect(tree == kept)
    }

    @Test("only objects written as the serializer writes them keep their text")
    func keptTextIsCanonical() throws {
        let text = #"{"a":{"x":1},"b":{ "x":1},"c":{"x":"\n"},"d":{"x":""# + "\u{2028}" + #""}}"#
        let kept = try JSON(parsing: Array(text.utf8), keepingObjectText: true)
        guard case .raw(let a)? = kept["a"] else {
            Issue.record("a canonical object came back without its text: \(kept)")
            return
        }
        #expect(Array(a.text) == Array(#"{"x":1}"#.utf8))
        #expect(kept["a"]?["x"] == .number("1"))
        #expect(kept["a"]?.kindDescription == "an object")
        for member in ["b", "c", "d"] {
            guard case .object? = kept[member] else {
                Issue.record("\(member) kept a text the serializer would write differently")
                continue
            }
        }
        guard case .object = kept else {
            Issue.record("the whole document kept a text the serializer would write differently")
            return
        }
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

    @Test("a snapshot's version is FNV-1a 64 of its bytes, as it always was (clients keep it across restarts)")
    func snapshotVersionValues() {
        // Known FNV-1a vectors, a text of whole words and a tail, every byte value, and around one word.
        #expect(Snapshot(json: []).version == "cbf29ce484222325")
        #expect(Snapshot(json: Array("a".utf8)).version == "af63dc4c8601ec8c")
        #expect(Snapshot(json: Array("foobar".utf8)).version == "85944171f73967e8")
        #expect(Snapshot(json: Array(#"[{"id":"591001e8","name":"Group 1"}]"#.utf8)).version == "63b3ef7809517f3e")
        #expect(Snapshot(json: (0...255).map { UInt8($0) }).version == "4242dc5249c33625")
        #expect(Snapshot(json: Array("1234567".utf8)).version == "ec75ca32794b12a7")
        #expect(Snapshot(json: Array("12345678".utf8)).version == "173932c41a90a42d")
        #expect(Snapshot(json: Array("123456789".utf8)).version == "06d5573923c6cdfc")
    }
}
