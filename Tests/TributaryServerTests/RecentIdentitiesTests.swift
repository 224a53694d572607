import Aggregation
import Testing
@testable import TributaryServer

/// A reader's memory of the identities it hashed last: the same identity as the hasher's,
/// never one caller's for another, and bounded.
@Suite("Recent identities: remembered hashes, never crossed, bounded")
struct RecentIdentitiesTests {
    static let hasher = IdentityHasher(secret: Array("recent-identities-tests".utf8))

    @Test("a remembered identity is the hasher's, asked again or not")
    func sameAsHasher() {
        let recent = RecentIdentities(hasher: Self.hasher)
        let headers = [(name: "Authorization", value: "Bearer alice")]
        let first = recent.identity(subject: nil, headers: headers)
        #expect(first == Self.hasher.identity(subject: nil, headers: headers))
        #expect(recent.identity(subject: nil, headers: headers) == first)
        #expect(recent.count == 1)
    }

    @Test("callers whose parts only join alike get identities of their own", arguments: [
        ((nil, [("Authorization", "Bearer a")]), ("", [("Authorization", "Bearer a")])),
        (("a", [("X-Key", "b")]), ("a|", [("X-Key", "b")])),
        ((nil, [("X-A", "1:x"), ("X-B", "2")]), (nil, [("X-A", "1"), ("X-B", ":x2")])),
        (("sub", []), ("sub", [("X-Key", "")])),
    ] as [((String?, [(String, String)]), (String?, [(String, String)]))])
    func neverCrossed(first: (String?, [(String, String)]), second: (String?, [(String, String)])) {
        let recent = RecentIdentities(hasher: Self.hasher)
        let a = recent.identity(subject: first.0, headers: first.1.map { (name: $0.0, value: $0.1) })
        let b = recent.identity(subject: second.0, headers: second.1.map { (name: $0.0, value: $0.1) })
        #expect(a == Self.hasher.identity(subject: first.0, headers: first.1.map { (name: $0.0, value: $0.1) }))
        #expect(b == Self.hasher.identity(subject: second.0, headers: second.1.map { (name: $0.0, value: $0.1) }))
        #expect(a != b)
    }

    @Test("credentials equal as Swift strings but not as bytes are two callers: é composed and decomposed, K and the Kelvin sign", arguments: [
        ("session=caf\u{E9}", "session=cafe\u{301}"), ("Bearer K", "Bearer \u{212A}"), ("\u{C5}", "\u{212B}"),
    ])
    func byBytes(first: String, second: String) {
        #expect(first == second, "Swift's String equality takes them for one")
        let recent = RecentIdentities(hasher: Self.hasher)
        let a = recent.identity(subject: nil, headers: [(name: "Cookie", value: first)])
        let b = recent.identity(subject: nil, headers: [(name: "Cookie", value: second)])
        #expect(a == Self.hasher.identity(subject: nil, headers: [(name: "Cookie", value: first)]))
        #expect(b == Self.hasher.identity(subject: nil, headers: [(name: "Cookie", value: second)]))
        #expect(a != b, "the second caller must not get the first's identity")
        #expect(recent.count == 2)
    }

    @Test("a caller's key is its parts, each length-prefixed by its UTF-8 bytes: one per caller, byte for byte", arguments: [
        (nil, []), ("", []), ("alice", [("Authorization", "Bearer a")]), (nil, [("X-A", "1:x"), ("X-B", "")]),
        ("\u{212A}elvin", [("X-Key", "caf\u{E9}"), ("X-Key", "cafe\u{301}")]), (String(repeating: "s", count: 12_345), []),
    ] as [(String?, [(String, String)])])
    func keyIsLengthPrefixed(subject: String?, headers: [(String, String)]) {
        var expected = subject.map { "\($0.utf8.count):\($0)" } ?? "-"
        for (name, value) in headers { expected += "|\(name.utf8.count):\(name)\(value.utf8.count):\(value)" }
        let key = RecentIdentities.key(subject: subject, headers: headers.map { (name: $0.0, value: $0.1) })
        #expect(key.map { Array($0.utf8) } == (expected.utf8.count <= RecentIdentities.longestKey ? Array(expected.utf8) : nil))
    }

    @Test("a credential longer than longestKey is hashed every time, not kept")
    func longNotKept() {
        let recent = RecentIdentities(hasher: Self.hasher)
        let long = [(name: "Authorization", value: "Bearer " + String(repeating: "x", count: RecentIdentities.longestKey))]
        #expect(recent.identity(subject: nil, headers: long) == Self.hasher.identity(subject: nil, headers: long))
        #expect(recent.count == 0)
    }

    @Test("at most limit identities are remembered: a flood of new callers starts it over")
    func bounded() {
        let recent = RecentIdentities(hasher: Self.hasher)
        for index in 0..<(3 * RecentIdentities.limit + 5) {
            _ = recent.identity(subject: nil, headers: [(name: "Authorization", value: "Bearer \(index)")])
            #expect(recent.count <= RecentIdentities.limit)
        }
        #expect(recent.count == 5, "forgotten at 1,025, 2,049 and 3,073: five since")
    }
}
