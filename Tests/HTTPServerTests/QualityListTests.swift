import HTTPCore
@testable import HTTPServer
import TestThreads
import Testing

/// `Accept` and `Accept-Encoding` read over their bytes (``QualityList``): the same answers as
/// the rule written plainly with strings, for any ASCII header, and values compared by bytes.
@Suite("Quality lists: Accept-Encoding and Accept, read over their bytes")
struct QualityListTests {
    /// The rule as it reads, with strings: split on commas, then on semicolons, spaces and tabs
    /// left out, lowercased; the value is what comes before the first semicolon (an entry
    /// `;gzip` names no coding); the first `q=` parameter weighs, clamped into 0…1, 1 when it is
    /// missing or no number. The byte reading must agree with it wherever both apply (ASCII).
    static func plainEntries(_ header: String) -> [(value: String, quality: Double)] {
        header.split(separator: ",").compactMap { range in
            let parts = range.split(separator: ";", omittingEmptySubsequences: false).map { $0.filter { $0 != " " && $0 != "\t" }.lowercased() }
            guard let value = parts.first, !value.isEmpty else { return nil }
            let given = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            return (value, given.isNaN ? 1 : min(max(given, 0), 1))
        }
    }

    static func plainAllowsGzip(_ header: String) -> Bool {
        let entries = plainEntries(header)
        if let named = entries.first(where: { $0.value == "gzip" || $0.value == "x-gzip" }) { return named.quality > 0 }
        if let any = entries.first(where: { $0.value == "*" }) { return any.quality > 0 }
        return false
    }

    /// Random headers from a seed (SplitMix64): the same headers on every run.
    struct Headers {
        var random: SplitMix64

        static let pieces = [
            "gzip", "GZip", "x-gzip", "X-GZIP", "*", "br", "identity", "deflate", "zstd", "g zip", "gz\tip",
            ",", ",", ", ", ";", ";", " ; ", "q=", "Q=", "q =", "0", "1", "0.5", ".", "0.000", "1.0", "-1", "1e308",
            "nan", "NaN", "inf", "-0", "0x1p-2", "abc", " ", "\t", "=", "level=1", "text/event-stream", "*/*",
        ]

        mutating func header() -> String {
            (0..<Int.random(in: 0...12, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
        }
    }

    @Test("for 5,000 random ASCII headers, the byte reading gives the entries and the gzip answer of the plain rule", .ownThread)
    func agreesWithThePlainRule() {
        var headers = Headers(random: SplitMix64(state: 35))
        for _ in 0..<5_000 {
            let header = headers.header()
            let entries = QualityList.entries(header)
            let plain = Self.plainEntries(header)
            #expect(entries.map(\.value) == plain.map(\.value), "\(header.debugDescription)")
            #expect(entries.map(\.quality) == plain.map(\.quality), "\(header.debugDescription)")
            #expect(QualityList.allowsGzip(header) == Self.plainAllowsGzip(header), "\(header.debugDescription)")
        }
    }

    @Test("browsers' and curl's Accept-Encoding, and the weights that decide")
    func acceptEncoding() {
        #expect(QualityList.allowsGzip("gzip, deflate, br, zstd"))
        #expect(QualityList.allowsGzip("deflate, gzip, br, zstd"))
        #expect(!QualityList.allowsGzip("identity"))
        #expect(!QualityList.allowsGzip("br;q=1, gzip;q=0, *"), "gzip named at 0 refuses it, whatever * says")
        #expect(QualityList.allowsGzip("br, *;q=0.001"))
        #expect(QualityList.allowsGzip("gzip;q=nan"), "a q that is no number weighs 1")
        #expect(!QualityList.allowsGzip("gzip;q=-1"))
        #expect(QualityList.allowsGzip("gzip;q=1e308"))
        #expect(!QualityList.allowsGzip(";gzip"), "an entry that begins with its parameters names no coding")
        #expect(QualityList.allowsGzip("gzip;;q=1"))
    }

    @Test("values are compared by their bytes: no Unicode case folding, and a comma splits whatever follows it")
    func valuesByBytes() {
        // U+0130 (İ) lowercases to i + U+0307 in Unicode; as bytes it is no ASCII letter at all.
        #expect(!QualityList.allowsGzip("GZ\u{130}P"))
        #expect(QualityList.entries("gzip,\u{301}br").map(\.value) == ["gzip", "\u{301}br"])
        #expect(QualityList.allowsGzip("gzip,\u{301}br"), "the combining accent is the next entry's, not the comma's")
    }
}
