import Aggregation
import Testing

/// Objects kept as their text alone (``RawJSON`` without members, as fetches parse upstream
/// bodies): the parser's scan of such text must accept exactly what the full parser accepts,
/// refuse the rest with the same error, and members read from the text must be what parsing
/// them gives.
@Suite("JSON: objects kept as text")
struct JSONKeptTextTests {
    private func kept(_ text: String) throws -> JSON {
        try JSON(parsing: Array(text.utf8), keepingObjectText: true)
    }

    /// Every parse of `bytes` agrees, whichever objects keep their text: the same document (and
    /// the same text written), or the same error at the same offset.
    private func expectSameOutcome(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let tree = Result { () throws(JSONParseError) in try JSON(parsing: bytes) }
        for keeping in [JSON.KeptText.objects, .objectsInsideTheDocument] {
            let kept = Result { () throws(JSONParseError) in try JSON(parsing: bytes, keeping: keeping) }
            switch (tree, kept) {
            case (.success(let tree), .success(let kept)):
                #expect(kept == tree, "\(keeping): \(bytes)", sourceLocation: sourceLocation)
                #expect(kept.serialized == tree.serialized, "\(keeping): \(bytes)", sourceLocation: sourceLocation)
            case (.failure(let treeError), .failure(let keptError)):
                #expect(keptError == treeError, "\(keeping): \(bytes)", sourceLocation: sourceLocation)
            default:
                Issue.record("parses disagree on \(bytes): \(tree) vs \(kept) (\(keeping))", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("a list read for its items: the document's object is parsed, each item kept as its text")
    func objectsInsideTheDocument() throws {
        let text = #"{"result":[{"id":"a","name":"A"},{"id":"b","n":{"x":1}}],"next":{"page":2}}"#
        let document = try JSON(parsing: Array(text.utf8), keeping: .objectsInsideTheDocument)
        guard case .raw(let raw) = document else {
            Issue.record("the canonical document did not keep its text: \(document)")
            return
        }
        #expect(raw.text.elementsEqual(text.utf8), "its text, with its members")
        let items = try #require(document["result"]?.arrayValue)
        #expect(items.count == 2)
        for item in items {
            guard case .raw = item else {
                Issue.record("an item did not keep its text: \(item)")
                continue
            }
        }
        guard case .raw? = document["next"] else {
            Issue.record("an object member did not keep its text")
            return
        }
        #expect(document == (try JSON(parsing: Array(text.utf8))))
        // Leading whitespace: the object starts past offset 0 and is kept as text alone, as before.
        #expect(try JSON(parsing: Array((" " + text).utf8), keeping: .objectsInsideTheDocument) == document)
    }

    static let documents = [
        #"{"result":[{"id":"591001e8-c7ed-5040-b304-809d925ffa73","name":"Group 1"},{"id":"e3d9","name":"Group 2"}]}"#,
        #"{"b":1,"a":[1.50,-0,2e10,-1.5E+3,0.5e-2,true,false,null],"c":{"é":"Grüße ✓ 😀","empty":{}},"d":[],"e":""}"#,
        #"{"s":"}]{[,:","t":"\u0041","u":{"v":[{"w":"x"}]}}"#,
        #"[{"id":"x"},{ "id":"y"},{},{"k":"\u2028"},{"a":{"b":{"c":{}}}}]"#,
        "{\"a\":\"\u{2028}\",\"b\":\"\u{2029}\",\"c\":\"\u{2027}\u{202A}\"}",
        #"{"a":01}"#, #"{"a":1.}"#, #"{"a":-}"#, #"{"a":.5}"#, #"{"a":1e}"#, #"{"a":1e+}"#, #"{"a":tru}"#, #"{"a":nul}"#,
        #"{"a":1,}"#, #"{"a" :1}"#, #"{"a":1 }"#, #"{,}"#, #"{"a"}"#, #"{"a":}"#, #"{"a":1"b":2}"#, #"{"a":[1,]}"#,
        #"{"a":"\x"}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00"}"#, #"{"a":"\u12"}"#, #"{"a":{"b":1}} x"#, #"{"a":{"b":1}}}"#,
        #"{"a":[{"b":1},{"c":2} ]}"#, #"[{"a":1},{"b":2}"#, #"{"a":"b"#, #"{"a":"#, #"{"#, #"{""#, "{}", "[{}]", " {} ",
        // A whole document that is one object, kept without a parser: whitespace after it, text
        // after it, an irregular object inside it.
        "{\"a\":1}\n\t ", #"{"a":[1]}x"#, #"{"a":[1]}{}"#, #"{"a":{"b": 1},"c":{"d":2}}"#,
    ]

    @Test("keeping text accepts and refuses exactly what parsing does, with the same error", arguments: documents)
    func sameOutcome(_ text: String) {
        expectSameOutcome(Array(text.utf8))
    }

    @Test("every cut of a document and every byte changed to a special one: both parses agree")
    func mutations() {
        let text = Array(#"{"id":"591001e8-c7ed-5040","n":[1,-2.5e3,true,null,{"é":"x"}],"o":{}}"#.utf8)
        for end in 0...text.count { expectSameOutcome(Array(text[..<end])) }
        let specials: [UInt8] = [0x22, 0x5C, 0x00, 0x1F, 0x20, 0x7F, 0x80, 0xC3, 0xE2, 0xFF, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x30, 0x2D]
        for index in text.indices {
            for special in specials where text[index] != special {
                var changed = text
                changed[index] = special
                expectSameOutcome(changed)
            }
        }
    }

    @Test("a special byte at every offset of a string, across the eight-byte steps of the scan")
    func stringBytesAtEveryOffset() {
        let specials: [[UInt8]] = [
            [0x22], [0x5C, 0x6E], [0x5C, 0x78], [0x00], [0x09], [0x1F], [0x7F], [0xC3, 0xA9], [0xE2, 0x80, 0xA8], [0xE2, 0x80, 0xA9],
            [0xF0, 0x9F, 0x98, 0x80], [0x80], [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x80],
        ]
        for length in 0..<20 {
            for offset in 0...length {
                for special in specials {
                    var body = Array(repeating: UInt8(ascii: "a"), count: length)
                    body.insert(contentsOf: special, at: offset)
                    expectSameOutcome(Array(#"{"k":""#.utf8) + body + Array(#""}"#.utf8))
                    expectSameOutcome(Array("[{\"".utf8) + body + Array("\":1}]".utf8))
                }
            }
        }
    }

    @Test("every invalid UTF-8 form is refused, every valid one kept", arguments: [
        [0xC0, 0xAF], [0xC1, 0xBF], [0xC2], [0xC2, 0x41], [0xE0, 0x80, 0x80], [0xE0, 0x9F, 0xBF], [0xE0, 0xA0], [0xED, 0xA0, 0x80],
        [0xED, 0xBF, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80],
        [0xF8, 0x88, 0x80, 0x80, 0x80], [0xBF], [0xFE], [0xC2, 0x80], [0xDF, 0xBF], [0xE0, 0xA0, 0x80], [0xED, 0x9F, 0xBF],
        [0xEE, 0x80, 0x80], [0xEF, 0xBF, 0xBF], [0xF0, 0x90, 0x80, 0x80], [0xF4, 0x8F, 0xBF, 0xBF], [0xF3, 0xBF, 0xBF, 0xBF],
    ] as [[UInt8]])
    func utf8(_ sequence: [UInt8]) {
        expectSameOutcome(Array(#"{"k":""#.utf8) + sequence + Array(#""}"#.utf8))
        expectSameOutcome(Array(#"{""#.utf8) + sequence + Array(#"":[]}"#.utf8))
    }

    @Test("nesting: as deep as the limit is kept, one deeper is refused as the parser refuses it")
    func depth() throws {
        func nested(_ depth: Int) -> [UInt8] {
            Array(String(repeating: #"{"a":"#, count: depth - 1).utf8) + Array("{}".utf8) + Array(repeating: UInt8(ascii: "}"), count: depth - 1)
        }
        let deepest = try JSON(parsing: nested(512), keepingObjectText: true)
        guard case .raw = deepest else {
            Issue.record("a canonical document at the nesting limit did not keep its text")
            return
        }
        expectSameOutcome(nested(512))
        expectSameOutcome(nested(513))
        // Inside an array and an object: 510 more levels reach the limit, 511 pass it.
        expectSameOutcome(Array(#"[{"a":"#.utf8) + nested(510) + Array("}]".utf8))
        expectSameOutcome(Array(#"[{"a":"#.utf8) + nested(511) + Array("}]".utf8))
    }

    @Test("members read from the text are the ones parsing gives: first of repeated names, missing ones, nested values")
    func memberLookup() throws {
        let text = #"{"s":"}]{[,:","n":-1.5e3,"b":true,"z":null,"a":[{"x":"}"},[]],"o":{"p":{"q":[1]}},"dup":1,"dup":2,"":"empty"}"#
        let document = try kept(text)
        guard case .raw(let raw) = document else {
            Issue.record("a canonical object did not keep its text")
            return
        }
        let tree = try JSON(parsing: Array(text.utf8))
        for name in ["s", "n", "b", "z", "a", "o", "dup", "", "missing", "S", "du", "dupe"] {
            #expect(document[name] == tree[name], "member \(name)")
            #expect(raw.member(named: name) == raw.members.first { $0.key == name }?.value, "member \(name)")
        }
        #expect(document["dup"] == .number("1"))
        #expect(document["o"]?["p"]?["q"] == .array([.number("1")]))
        #expect(JSONPath("o.p.q").value(in: document) == .array([.number("1")]))
        #expect(document["a"]?.arrayValue?.first?["x"] == .string("}"))
        #expect(raw.members.map(\.key) == ["s", "n", "b", "z", "a", "o", "dup", "dup", ""])
        #expect(try kept("{}")["a"] == nil)
        #expect(try kept("{}").objectValue?.isEmpty == true)
    }

    @Test("string and object values read straight from the text are the ones parsing gives")
    func plainValues() throws {
        let text = "{\"u\":\"\u{212A}é\",\"e\":\"\",\"q\":\"}\",\"eo\":{},\"o\":{\"s\":\"{\"},\"a\":[\"x\"],\"n\":0}"
        let document = try kept(text)
        guard case .raw = document else {
            Issue.record("a canonical object did not keep its text")
            return
        }
        let tree = try JSON(parsing: Array(text.utf8))
        for name in ["u", "e", "q", "eo", "o", "a", "n"] {
            #expect(document[name] == tree[name], "member \(name)")
            #expect(document[name]?.serialized == tree[name]?.serialized, "member \(name)")
        }
        #expect(document["u"] == .string("\u{212A}é"))
        #expect(document["o"]?["s"] == .string("{"))
        guard case .raw? = document["eo"] else {
            Issue.record("an object read from the text did not keep its text")
            return
        }
    }

    @Test("a string member lent in place has the bytes of the string parsing gives; anything else is nil")
    func stringMembersInPlace() throws {
        let text = "{\"u\":\"\u{212A}é\",\"e\":\"\",\"q\":\"}\",\"id\":\"a/b\",\"id\":\"second\",\"o\":{\"id\":\"inner\"},\"n\":7,\"t\":true}"
        let document = try kept(text)
        guard case .raw(let raw) = document else {
            Issue.record("a canonical object did not keep its text")
            return
        }
        let tree = try JSON(parsing: Array(text.utf8))
        for name in ["u", "e", "q", "id", "o", "n", "t", "missing", "i", "ID"] {
            let lent = raw.withStringMember(named: name) { Array($0) }
            if case .string(let parsed)? = tree[name] {
                #expect(lent == Array(parsed.utf8), "member \(name)")
            } else {
                #expect(lent == nil, "member \(name): \(String(describing: tree[name]))")
            }
        }
        #expect(raw.withStringMember(named: "id") { String(decoding: $0, as: UTF8.self) } == "a/b", "the first of repeated names")
    }

    @Test("names compare as strings do: canonically equivalent names are equal, as when parsed")
    func unicodeNames() throws {
        // U+212A KELVIN SIGN is canonically equivalent to K; é precomposed to e + U+0301.
        let document = try kept("{\"\u{212A}\":1,\"e\u{301}\":2,\"K\":3}")
        let tree = try JSON(parsing: Array("{\"\u{212A}\":1,\"e\u{301}\":2,\"K\":3}".utf8))
        for name in ["K", "\u{212A}", "é", "e\u{301}", "e"] {
            #expect(document[name] == tree[name], "member \(name)")
        }
        #expect(document["K"] == .number("1"))
        #expect(document["é"] == .number("2"))
    }

    @Test("merging kept objects splices their texts when no name is shared, and merges as parsed when one is")
    func merging() throws {
        func merge(_ item: String, _ details: String) throws -> JSON? {
            ListResource.merge(try kept(item), details: try kept(details))
        }
        func treeMerge(_ item: String, _ details: String) throws -> JSON? {
            ListResource.merge(try JSON(parsing: Array(item.utf8)), details: try JSON(parsing: Array(details.utf8)))
        }
        let cases: [(String, String)] = [
            (#"{"id":"a","name":"A"}"#, #"{"taskCount":7,"lastUpdated":"2026"}"#),
            (#"{"id":"a","name":"A"}"#, #"{"name":"B","taskCount":7}"#),
            (#"{"id":"a"}"#, #"{"x":{"id":"nested, not shared"},"y":["id"]}"#),
            (#"{"id":"a","s":"id:"}"#, #"{"t":1}"#),
            ("{}", #"{"a":1}"#), (#"{"a":1}"#, "{}"), ("{}", "{}"),
            ("{\"\u{212A}\":1}", #"{"K":2}"#),
            ("{" + (0..<17).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}", #"{"k3":0,"extra":1}"#),
            ("{" + (0..<17).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}", #"{"extra":1}"#),
            ("{" + (0..<16).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}", #"{"k15":0}"#),
            ("{" + (0..<16).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + "}", #"{"k16":0}"#),
            // Names told apart by their first bytes, or not: a shared first letter, empty names.
            (#"{"id":"a"}"#, #"{"ids":1,"i":2,"idx":3,"Id":4}"#),
            (#"{"":1}"#, #"{"a":2}"#), (#"{"a":1}"#, #"{"":2}"#), (#"{"":1}"#, #"{"":2}"#),
            // An ASCII first letter against a non-ASCII one, both ways; a combining mark after it.
            (#"{"K":1}"#, "{\"\u{212A}\":2}"), ("{\"e\u{301}\":1}", "{\"é\":2}"), ("{\"é\":1}", "{\"e\u{301}\":2}"),
            (#"{"e":1}"#, "{\"e\u{301}\":2}"), ("{\"é\":1}", #"{"e":2}"#), ("{\"éa\":1}", "{\"éb\":2}"),
        ]
        for (item, details) in cases {
            let merged = try merge(item, details)
            let expected = try treeMerge(item, details)
            #expect(merged == expected, "\(item) + \(details)")
            #expect(merged?.serialized == expected?.serialized, "\(item) + \(details)")
        }
        guard case .raw? = try merge(#"{"id":"a"}"#, #"{"n":1}"#) else {
            Issue.record("disjoint kept objects were not spliced")
            return
        }
        #expect(try merge(#"{"id":"a"}"#, #"{"n":1}"#)?.objectValue?.map(\.key) == ["id", "n"])
        #expect(try merge(#"{"id":"a"}"#, "[1]") == nil)
    }

    @Test("after an irregular object, later canonical ones still keep their text; the irregular one does not")
    func afterAnIrregularObject() throws {
        let document = try kept(#"[{"a":{"b":1} },{"c":{"d":2}},{ "e":3}]"#)
        let items = try #require(document.arrayValue)
        guard case .object = items[0], case .raw = items[1], case .object = items[2] else {
            Issue.record("unexpected kinds: \(items)")
            return
        }
        guard case .raw? = items[0]["a"] else {
            Issue.record("a canonical object inside an irregular one lost its text")
            return
        }
        #expect(document == (try JSON(parsing: Array(#"[{"a":{"b":1}},{"c":{"d":2}},{"e":3}]"#.utf8))))
    }
}
