@testable import Aggregation
import Foundation
import Testing
import TestThreads

/// What parsing one document may allocate for the values it builds is bounded, relative to the
/// document's size (32 bytes per byte, beyond a 64 KiB floor) and absolutely (64 MiB): text
/// made of tiny values, whose `JSON` tree would weigh 40 to 80 times the text, is refused as
/// malformed instead of taking hundreds of MiB. End to end, against a real service and a
/// hostile upstream, with its peak memory: `HostileUpstreamBodyTests` (TributaryServerTests).
@Suite("JSON: the parser's working memory", .ownThread)
struct JSONWorkingMemoryTests {
    /// `unit` repeated inside `opening`…`closing`, `separator` between, to just under `bytes`.
    static func repeated(_ unit: String, _ bytes: Int, opening: String = "[", closing: String = "]", separator: String = ",") -> [UInt8] {
        let count = (bytes - 2) / (unit.utf8.count + separator.utf8.count)
        return Array((opening + Array(repeating: unit, count: count).joined(separator: separator) + closing).utf8)
    }

    static let eightMiB = 8 * 1024 * 1024 - 16

    @Test("the limit: 32 bytes per byte of text beyond 64 KiB, at most 64 MiB")
    func limit() {
        #expect(JSONParser.workingMemoryLimit(forInputBytes: 0) == 64 * 1024)
        #expect(JSONParser.workingMemoryLimit(forInputBytes: 1024 * 1024) == 32 * 1024 * 1024 + 64 * 1024)
        #expect(JSONParser.workingMemoryLimit(forInputBytes: 2 * 1024 * 1024) == 64 * 1024 * 1024)
        #expect(JSONParser.workingMemoryLimit(forInputBytes: .max) == 64 * 1024 * 1024)
    }

    /// Refused for its memory, however objects keep their text.
    static func expectRefusedForMemory(_ text: [UInt8], keeping: [JSON.KeptText] = [.none, .objects]) {
        for keeping in keeping {
            #expect {
                _ = try JSON(parsing: text, keeping: keeping)
            } throws: { error in
                (error as? JSONParseError)?.exceedsWorkingMemory == true
            }
        }
    }

    /// The hostile shapes, by name (the text is made in the test: Swift Testing would print
    /// megabytes of arguments), each as `unit` repeated to the size asked for.
    static let shapes: [String: (unit: String, opening: String, closing: String, separator: String)] = [
        "[[],[],…]": ("[]", "[", "]", ","),
        "[[1],[1],…]": ("[1]", "[", "]", ","),
        "[1,1,…]": ("1", "[", "]", ","),
        "[[[[]]]],…": ("[[[[]]]]", "[", "]", ","),
        #"{"a": {}, …}, spaced: parsed in full"#: (#""a": {}"#, "{", "}", ", "),
        #"[{"a":1},…], the objects kept as text"#: (#"{"a":1}"#, "[", "]", ","),
        "[12345,12345,…], ~1.4 million numbers": ("12345", "[", "]", ","),
    ]

    static func text(_ shape: String, _ bytes: Int) -> [UInt8] {
        let parts = shapes[shape]!
        return repeated(parts.unit, bytes, opening: parts.opening, closing: parts.closing, separator: parts.separator)
    }

    @Test("8 MiB of small values, whose tree weighs more than 64 MiB, is refused for its memory", arguments: Array(shapes.keys))
    func eightMiB(_ shape: String) {
        Self.expectRefusedForMemory(Self.text(shape, Self.eightMiB), keeping: [.none])
    }

    @Test("refused whether objects keep their text or not, and the document's own object too")
    func everyKeptText() {
        Self.expectRefusedForMemory(Self.text("[[1],[1],…]", Self.eightMiB), keeping: [.none, .objects, .objectsInsideTheDocument])
        Self.expectRefusedForMemory(Self.text(#"[{"a":1},…], the objects kept as text"#, Self.eightMiB), keeping: [.objects])
    }

    @Test("relative to the text: 512 KiB of [[1],[1],…], ~60 bytes of tree per byte, is refused (its limit: 16 MiB)")
    func relative() {
        Self.expectRefusedForMemory(Self.text("[[1],[1],…]", 512 * 1024))
    }

    @Test("a kept object whose members would need more than the limit reads as none, not as 100 MiB of members")
    func keptObjectReadLater() throws {
        // Canonical, so kept as its text whole: nothing is built until its members are read.
        let text = Self.repeated(#""a":{}"#, Self.eightMiB, opening: "{", closing: "}")
        #expect(throws: JSONParseError.self) { try JSON(parsing: text) }
        let kept = try JSON(parsing: text, keepingObjectText: true)
        guard case .raw(let raw) = kept else { Issue.record("a canonical object is kept as its text"); return }
        #expect(raw.members.isEmpty)
        #expect(kept["a"] == .object([]), "one member is read alone, within the limit")
    }

    @Test("near the limit: whatever a full parse accepts, its kept text reads back whole, member by member and at once")
    func keptReadsNeverNeedMore() throws {
        // The floor (64 KiB) is what such small texts get: [[1],…] crosses it at ~400 items.
        var accepted = 0
        for count in stride(from: 100, through: 700, by: 20) {
            let inner = Array(repeating: "[1]", count: count).joined(separator: ",")
            let text = Array(#"{"a":[\#(inner)],"b":{"c":[\#(inner)]}}"#.utf8)
            guard let document = try? JSON(parsing: text) else { continue }
            accepted += 1
            let kept = try JSON(parsing: text, keepingObjectText: true)
            #expect(kept == document, "\(count)")
            #expect(kept["a"] == document["a"], "\(count)")
            #expect(kept["b"]?["c"] == document["b"]?["c"], "\(count)")
        }
        #expect(accepted > 0 && accepted < 31, "the sizes straddle the limit: \(accepted) of 31 accepted")
    }

    @Test("documents of ordinary shapes parse: pretty-printed objects, numbers, a list of objects kept as text")
    func ordinaryShapes() throws {
        // Pretty-printed objects (nothing kept as text: parsed in full), with strings, numbers,
        // short arrays and a nested object each.
        let items = (0..<20_000).map { index -> [String: Any] in
            ["id": "item-\(index)", "name": "An item named \(index)", "count": index, "ratio": 0.25,
             "tags": ["alpha", "beta"], "owner": ["login": "someone", "id": index], "active": true]
        }
        let pretty = try JSONSerialization.data(withJSONObject: ["total": items.count, "items": items], options: [.prettyPrinted])
        #expect(pretty.count > 4 * 1024 * 1024)
        let document = try JSON(parsing: Array(pretty))
        #expect(document["items"]?.arrayValue?.count == 20_000)
        // Five-digit numbers: 1 MiB of them (~175,000).
        let numbers = Self.repeated("12345", 1024 * 1024)
        #expect(try JSON(parsing: numbers).arrayValue?.count == (1024 * 1024 - 2) / 6)
        // A /groups list: objects kept as text cost a slot each.
        let list = Self.repeated(#"{"id":"g1","name":"Group","taskCount":3,"lastUpdated":"2026-01-01T00:00:00Z"}"#, Self.eightMiB)
        #expect(try JSON(parsing: list, keepingObjectText: true).arrayValue?.isEmpty == false)
    }
}
