import Aggregation
import Testing
import TestThreads

@Suite("Projected fields: the members kept of each element", .ownThread)
struct FieldSelectionTests {
    /// `document` projected through `fields`, as compact text; parsed as a live stream's
    /// documents are (objects kept as their text), so kept objects are projected too.
    func projected(_ fields: String, _ document: String, always: [String] = ["error"]) throws -> String {
        let selection = try FieldSelection(parsing: fields)
        let parsed = try JSON(parsing: Array(document.utf8), keeping: .objects)
        return String(decoding: selection.projecting(parsed, always: always).serialized, as: UTF8.self)
    }

    @Test("a name keeps that member of each element, in the element's own order")
    func keepsNamedMembers() throws {
        let document = #"[{"id":"a","name":"Core","taskCount":3,"lastUpdated":"t1"},{"name":"Web","id":"b","taskCount":5}]"#
        #expect(try projected("taskCount,id", document) == #"[{"id":"a","taskCount":3},{"id":"b","taskCount":5}]"#)
    }

    @Test("a member an element lacks is absent, not null")
    func absentMember() throws {
        #expect(try projected("id,owner", #"[{"id":1},{"id":2,"owner":null}]"#) == #"[{"id":1},{"id":2,"owner":null}]"#)
    }

    @Test("a dotted name keeps one member inside its parent object, and inside each object of a parent array")
    func nestedMembers() throws {
        let document = #"[{"id":1,"owner":{"id":7,"login":"ada","url":"u"},"medias":[{"id":"m","title":"T","size":9}],"x":0}]"#
        #expect(try projected("owner.login,medias.title,id", document)
            == #"[{"id":1,"owner":{"login":"ada"},"medias":[{"title":"T"}]}]"#)
    }

    @Test("a dotted name whose parent is a string or null keeps nothing of it")
    func nestedInScalar() throws {
        #expect(try projected("id,owner.login", #"[{"id":1,"owner":"ada"},{"id":2,"owner":null}]"#) == #"[{"id":1},{"id":2}]"#)
    }

    @Test("a failed item's error and the pending marker are kept whatever is asked")
    func alwaysKept() throws {
        let document = #"[{"id":"a","name":"A","error":{"code":"upstream_timeout"}},{"id":"b","name":"B","waiting":true}]"#
        #expect(try projected("id", document, always: ["error", "waiting"])
            == #"[{"id":"a","error":{"code":"upstream_timeout"}},{"id":"b","waiting":true}]"#)
    }

    @Test("the same members in another order, repeated, or absorbed by their parent are one selection")
    func canonical() throws {
        let a = try FieldSelection(parsing: "name,id,owner.login")
        let b = try FieldSelection(parsing: "owner.login,id,name,id")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(try FieldSelection(parsing: "owner.login,owner") == FieldSelection(parsing: "owner"))
        #expect(try FieldSelection(parsing: "owner,owner.login") == FieldSelection(parsing: "owner"))
        #expect(a.names == ["id", "name", "owner.login"])
        #expect(a != .everything)
    }

    @Test("names compare by their bytes: the Kelvin sign is not K, NFD é is not NFC é")
    func namesByBytes() throws {
        let kelvin = "\u{212A}", nfd = "e\u{301}", nfc = "\u{E9}"
        #expect(try FieldSelection(parsing: "K") != FieldSelection(parsing: kelvin))
        #expect(try FieldSelection(parsing: nfc) != FieldSelection(parsing: nfd))
        #expect(try projected("K,\(nfc)", #"[{"\#(kelvin)":1,"K":2,"\#(nfd)":3,"\#(nfc)":4}]"#) == #"[{"K":2,"\#(nfc)":4}]"#)
    }

    @Test("a client's fields only narrow what the resource serves")
    func intersection() throws {
        let served = try FieldSelection(parsing: "id,name,owner")
        #expect(served.intersection(try FieldSelection(parsing: "name,secret,owner.login")) == (try FieldSelection(parsing: "name,owner.login")))
        #expect(served.intersection(.everything) == served)
        #expect(FieldSelection.everything.intersection(served) == served)
        let nested = try FieldSelection(parsing: "id,owner.login")
        #expect(nested.intersection(try FieldSelection(parsing: "owner.id,id")) == (try FieldSelection(parsing: "id")))
    }

    @Test("everything projects nothing: the document comes back as it was")
    func everything() throws {
        let document = try JSON(parsing: Array(#"[{"id":1,"x":{"y":2}}]"#.utf8))
        #expect(FieldSelection.everything.keepsEverything)
        #expect(FieldSelection.everything.projecting(document) == document)
    }

    @Test("refused: an empty name, an empty part of a dotted one, more than 64 names, a name over 128 bytes",
          arguments: ["", "id,", ",id", "id,,name", "owner.", ".login", "owner..login",
                      (0...64).map { "f\($0)" }.joined(separator: ","), String(repeating: "n", count: 129)])
    func refused(_ text: String) {
        #expect(throws: FieldSelectionError.self) { try FieldSelection(parsing: text) }
    }

    @Test("accepted at the bounds: 64 names, a name of 128 bytes")
    func bounds() throws {
        #expect(try FieldSelection(parsing: (1...64).map { "f\($0)" }.joined(separator: ",")).names.count == 64)
        #expect(try FieldSelection(parsing: String(repeating: "n", count: 128)).names.count == 1)
    }

    @Test("a refusal says what is wrong without echoing the names")
    func refusalMessage() {
        let secret = String(repeating: "s", count: 200)
        #expect(throws: FieldSelectionError.self) { try FieldSelection(parsing: secret) }
        do {
            _ = try FieldSelection(parsing: secret)
        } catch {
            #expect(error.problem == "has a name longer than 128 bytes")
        }
    }
}
