@testable import Aggregation
import Testing

/// The fast path in front of parameter patterns' `Regex`: it may accept only what `Regex`
/// accepts, and it should accept what the usual shapes accept, or it saves nothing.
@Suite("Parameter patterns of the shape ^[class]{m,n}$, decided over bytes")
struct AnchoredClassPatternTests {
    static let shapes = [
        "^[a-z0-9-]{1,40}$", #"^[\w.-]+$"#, "^[A-Za-z_]*$", #"^[\d]{4}$"#, "^[a-f0-9]{2,}$", "^[-a]{0,3}$", "^[a-]+$",
        #"^[\-\.]+$"#, "^[ a-z]{1,5}$", "^[.]+$",
    ]

    /// Every printable ASCII byte alone, pairs of the interesting ones, long runs, non-ASCII
    /// text (the Kelvin sign, é both ways, an emoji) and control bytes.
    static let values: [String] = {
        var values = (0x20..<0x7F).map { String(UnicodeScalar(UInt8($0))) }
        let interesting = ["a", "Z", "0", "9", "-", ".", "_", " ", "\\", "]", "[", "^", "$"]
        for first in interesting { for second in interesting { values.append(first + second) } }
        values += ["", "core", "core-team-7", String(repeating: "a", count: 40), String(repeating: "a", count: 41), "2026",
                   "deadbeef", "..", "a.b-c_d", "\u{212A}ilo", "caf\u{E9}", "cafe\u{301}", "👍", "a\n", "a\r\n", "\t", "a\u{0}"]
        return values
    }()

    @Test("what it accepts, Regex accepts; on ASCII text it accepts all that Regex does")
    func agreesWithRegex() throws {
        for shape in Self.shapes {
            let fast = try #require(AnchoredClassPattern(shape), "\(shape) is of the shape")
            let regex = try Regex(shape)
            for value in Self.values {
                let matches = (try? regex.firstMatch(in: value)) != nil
                if fast.accepts(value) { #expect(matches, "\(shape) accepted \(value.debugDescription), which Regex refuses") }
                let printableASCII = value.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
                if printableASCII { #expect(fast.accepts(value) == matches, "\(shape) on \(value.debugDescription)") }
            }
        }
    }

    @Test("other shapes are left to Regex: negation, set operations, nested classes, no anchors, escapes of letters")
    func otherShapes() {
        for pattern in ["^[^a-z]+$", "^[a-z--x]+$", "^[a-z&&b]+$", "^[a-z~~b]+$", "^[[:alpha:]]+$", "[a-z]+", "^[a-z]+",
                        #"^[\s]+$"#, #"^[\p{L}]+$"#, "^[a-z]+?$", "^(a|b)$", "^[a-z]{2,1}$", "^[z-a]+$", "^[]$", "^[é]+$",
                        "^[a-z]{,3}$", "^[a-z]+$x"] {
            #expect(AnchoredClassPattern(pattern) == nil, "\(pattern)")
        }
    }
}
