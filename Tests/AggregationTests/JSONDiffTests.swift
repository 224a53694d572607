import Aggregation
import PropertyBased
import Testing
import TributaryTesting
import TestThreads

@Suite("JSON diff: the RFC 6902 patch from one document to the next", .ownThread)
struct JSONDiffTests {
    let diff = JSONDiff(itemIDs: [JSONPath("id")])

    /// `text` parsed as a live stream's document is: from its canonical text, objects kept as text.
    func document(_ text: String) throws -> JSON {
        try JSON(parsing: Array(text.utf8), keeping: .objects)
    }

    /// The patch as its event data, e.g. `[{"op":"remove","path":"/1"}]`.
    func patchText(_ old: String, _ new: String, diff: JSONDiff? = nil) throws -> String {
        String(decoding: JSONPatch.serialized((diff ?? self.diff).patch(from: try document(old), to: try document(new))), as: UTF8.self)
    }

    /// Checks that the patch, sent as text and applied by the test's own RFC 6902, makes `new` of `old`.
    func expectRebuilds(_ old: JSON, _ new: JSON, diff: JSONDiff? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let oldDocument = try JSON(parsing: old.serialized, keeping: .objects)
        let newDocument = try JSON(parsing: new.serialized, keeping: .objects)
        let patch = try JSON(parsing: JSONPatch.serialized((diff ?? self.diff).patch(from: oldDocument, to: newDocument)))
        let patched = try JSONPatchApplier.apply(patch, to: try JSON(parsing: old.serialized))
        #expect(JSONPatchApplier.sameValue(patched, try JSON(parsing: new.serialized)),
                "\(String(decoding: old.serialized, as: UTF8.self)) → \(String(decoding: new.serialized, as: UTF8.self)) with \(String(decoding: patch.serialized, as: UTF8.self)) gave \(String(decoding: patched.serialized, as: UTF8.self))",
                sourceLocation: sourceLocation)
    }

    @Test("equal documents give an empty patch")
    func equal() throws {
        #expect(try patchText(#"[{"id":"a","n":1}]"#, #"[{"id":"a","n":1}]"#) == "[]")
    }

    @Test("one changed member of one item is one replace of that member")
    func changedMember() throws {
        let old = #"[{"id":"a","taskCount":1},{"id":"b","taskCount":2},{"id":"c","taskCount":3}]"#
        let new = #"[{"id":"a","taskCount":1},{"id":"b","taskCount":999},{"id":"c","taskCount":3}]"#
        #expect(try patchText(old, new) == #"[{"op":"replace","path":"/1/taskCount","value":999}]"#)
    }

    @Test("an item gone is removed, a new one added where it belongs, by id")
    func removedAndAdded() throws {
        #expect(try patchText(#"[{"id":1},{"id":2},{"id":3}]"#, #"[{"id":1},{"id":3}]"#) == #"[{"op":"remove","path":"/1"}]"#)
        #expect(try patchText(#"[{"id":1},{"id":3}]"#, #"[{"id":1},{"id":2},{"id":3}]"#) == #"[{"op":"add","path":"/1","value":{"id":2}}]"#)
        #expect(try patchText("[]", #"[{"id":1}]"#) == #"[{"op":"add","path":"/0","value":{"id":1}}]"#)
    }

    @Test("an item moved to either end is one move, whatever the length")
    func oneMove() throws {
        let ids = (0..<50).map { #"{"id":"g\#($0)","n":\#($0)}"# }
        let old = "[" + ids.joined(separator: ",") + "]"
        let firstToLast = "[" + (ids.dropFirst() + [ids[0]]).joined(separator: ",") + "]"
        let lastToFirst = "[" + ([ids[49]] + ids.dropLast()).joined(separator: ",") + "]"
        #expect(try patchText(old, firstToLast) == #"[{"op":"move","from":"/0","path":"/49"}]"#)
        #expect(try patchText(old, lastToFirst) == #"[{"op":"move","from":"/49","path":"/0"}]"#)
        var swapped = ids
        swapped.swapAt(10, 30)
        let swap = try diff.patch(from: document(old), to: document("[" + swapped.joined(separator: ",") + "]"))
        #expect(swap.count == 2 && swap.allSatisfy { if case .move = $0 { true } else { false } })
    }

    @Test("a moved item that also changed is moved, then patched at its new index")
    func movedAndChanged() throws {
        let patch = try patchText(#"[{"id":"a","n":1},{"id":"b","n":2},{"id":"c","n":3}]"#, #"[{"id":"c","n":30},{"id":"a","n":1},{"id":"b","n":2}]"#)
        #expect(patch == #"[{"op":"move","from":"/2","path":"/0"},{"op":"replace","path":"/0/n","value":30}]"#)
    }

    @Test("members: gone removed, new added, a nested object patched in place")
    func members() throws {
        let patch = try patchText(#"{"a":1,"b":{"x":1,"y":2},"c":3}"#, #"{"a":1,"b":{"x":1,"y":5},"d":4}"#)
        #expect(patch == #"[{"op":"remove","path":"/c"},{"op":"replace","path":"/b/y","value":5},{"op":"add","path":"/d","value":4}]"#)
    }

    @Test("member names with / and ~ are escaped in the pointer (RFC 6901)")
    func escapedNames() throws {
        #expect(try patchText(#"{"a/b":1,"~c":2}"#, #"{"a/b":3,"~c":4}"#)
                == #"[{"op":"replace","path":"/a~1b","value":3},{"op":"replace","path":"/~0c","value":4}]"#)
    }

    @Test("strings and names are compared by their exact UTF-8, not as canonically equivalent Swift strings")
    func exactText() throws {
        #expect(try patchText(#"["é"]"#, "[\"e\u{301}\"]") == "[{\"op\":\"replace\",\"path\":\"/0\",\"value\":\"e\u{301}\"}]")
        #expect(try patchText("{\"\u{212A}\":1}", #"{"K":1}"#) == "[{\"op\":\"remove\",\"path\":\"/\u{212A}\"},{\"op\":\"add\",\"path\":\"/K\",\"value\":1}]")
        #expect(try patchText("[1.0]", "[1]") == #"[{"op":"replace","path":"/0","value":1}]"#)
    }

    @Test("an array with an item without id, or with a repeated id, is patched index by index")
    func indexWise() throws {
        #expect(try patchText(#"[{"id":1,"n":1},{"n":2}]"#, #"[{"n":2},{"id":1,"n":1}]"#)
                == #"[{"op":"remove","path":"/0/id"},{"op":"replace","path":"/0/n","value":2},{"op":"add","path":"/1/id","value":1},{"op":"replace","path":"/1/n","value":1}]"#)
        #expect(try patchText(#"[{"id":1,"n":1},{"id":1,"n":2},{"id":2}]"#, #"[{"id":1,"n":3},{"id":1,"n":1}]"#)
                == #"[{"op":"replace","path":"/0/n","value":3},{"op":"replace","path":"/1/n","value":1},{"op":"remove","path":"/2"}]"#)
    }

    @Test("items equal at both ends are left out: the window between is diffed, its indices where it lies")
    func window() throws {
        // The repeated id is outside the window: the two items between are diffed by id.
        #expect(try patchText(#"[{"id":1},{"id":1},{"id":2,"n":1},{"id":3},{"id":4}]"#, #"[{"id":1},{"id":1},{"id":3},{"id":2,"n":2},{"id":4}]"#)
                == #"[{"op":"move","from":"/2","path":"/3"},{"op":"replace","path":"/3/n","value":2}]"#)
        #expect(try patchText(#"[{"id":1},{"id":2},{"id":3}]"#, #"[{"id":1},{"n":0},{"id":2},{"id":3}]"#)
                == #"[{"op":"add","path":"/1","value":{"n":0}}]"#)
    }

    @Test("ids 7 and \"7\" are different ids")
    func idKinds() throws {
        #expect(try patchText(#"[{"id":7,"n":1}]"#, #"[{"id":"7","n":1}]"#)
                == #"[{"op":"remove","path":"/0"},{"op":"add","path":"/0","value":{"id":"7","n":1}}]"#)
    }

    @Test("an object with a repeated member name is replaced whole")
    func repeatedNames() throws {
        #expect(try patchText(#"{"a":{"x":1,"x":2}}"#, #"{"a":{"x":1,"x":3}}"#) == #"[{"op":"replace","path":"/a","value":{"x":1,"x":3}}]"#)
    }

    @Test("values of different kinds are replaced, the whole document too")
    func kinds() throws {
        #expect(try patchText(#"{"a":[1]}"#, #"{"a":{"b":1}}"#) == #"[{"op":"replace","path":"/a","value":{"b":1}}]"#)
        #expect(try patchText("[1]", #"{"a":1}"#) == #"[{"op":"replace","path":"","value":{"a":1}}]"#)
    }

    @Test("rows are matched by the id of their item (topic.id), their medias by their own id")
    func nestedIDs() throws {
        let rows = JSONDiff(itemIDs: [JSONPath("topic.id"), JSONPath("id")])
        let old = #"[{"topic":{"id":"t1"},"medias":[{"id":"m1"}]},{"topic":{"id":"t2"},"medias":[{"id":"m2"}]}]"#
        let new = #"[{"topic":{"id":"t2"},"medias":[{"id":"m2"}]},{"topic":{"id":"t1"},"medias":[{"id":"m0"},{"id":"m1"}]}]"#
        #expect(try patchText(old, new, diff: rows)
                == #"[{"op":"move","from":"/0","path":"/1"},{"op":"add","path":"/1/medias/0","value":{"id":"m0"}}]"#)
    }

    @Test("applying the patch to the old document gives the new one: random lists, 1–6 changes each", .shrinking(false))
    func randomLists() async {
        await propertyCheck(count: 1_000, input: Gen.int(in: 0...Int.max)) { seed in
            var random = RandomDocuments(seed: seed)
            let old = random.list()
            let new = random.changed(old)
            // As a list (the top), and as a list inside an object, beside other members.
            try expectRebuilds(.array(old), .array(new))
            try expectRebuilds(.object([("items", .array(old)), ("total", .integer(old.count))]),
                               .object([("total", .integer(new.count)), ("items", .array(new))]))
        }
    }

    @Test("applying the patch to the old document gives the new one: random values of any shape", .shrinking(false))
    func randomValues() async {
        await propertyCheck(count: 1_000, input: Gen.int(in: 0...Int.max)) { seed in
            var random = RandomDocuments(seed: seed)
            try expectRebuilds(random.value(), random.value())
        }
    }

    @Test("a long reordering costs at most one move per item, and still rebuilds the document", .shrinking(false))
    func shuffled() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int.max)) { seed in
            var random = RandomDocuments(seed: seed)
            let old = (0..<300).map { JSON.object([("id", .integer($0)), ("n", .integer($0))]) }
            let new = old.shuffled(using: &random)
            let patch = diff.patch(from: .array(old), to: .array(new))
            #expect(patch.count < 300)
            try expectRebuilds(.array(old), .array(new))
        }
    }
}
