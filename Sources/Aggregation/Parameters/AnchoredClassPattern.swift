/// The shape most parameter patterns have, `^[class]{m,n}$` (`^[a-z0-9-]{1,40}$`,
/// `^[\w.-]+$`), decided over the value's bytes: a fast path in front of Swift's `Regex`,
/// which costs some 5,000 instructions a match on a request's path (issue 41).
///
/// It only ever accepts. A value whose bytes are all in the class (printable ASCII only, each
/// byte then one `Character`) and whose length is in bounds is one `Regex` accepts too; any
/// other value, a refusal or anything it cannot judge (non-ASCII bytes under `\w`), goes on to
/// `Regex`, which has the last word. So the fast path can change how long a check takes,
/// never its answer.
struct AnchoredClassPattern: Sendable {
    /// The class, one bit per ASCII byte.
    private let low: UInt64, high: UInt64
    private let minimum: Int, maximum: Int

    /// Nil unless `pattern` is exactly `^[…]` then `+`, `*`, `{n}`, `{m,}` or `{m,n}`, then
    /// `$`, the class made of printable ASCII characters, ranges of them, `\w`, `\d` and
    /// escaped punctuation: no negation, no other escape, nothing else around it.
    init?(_ pattern: String) {
        var bytes = Array(pattern.utf8)[...]
        guard bytes.popFirst() == UInt8(ascii: "^"), bytes.popLast() == UInt8(ascii: "$"),
              bytes.popFirst() == UInt8(ascii: "[") else { return nil }
        var low: UInt64 = 0, high: UInt64 = 0
        func add(_ from: UInt8, _ to: UInt8) {
            for byte in from...to { if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) } }
        }
        // The class's members up to its `]`; a member is a byte, or an escape standing for one.
        var members: [UInt8?] = []   // nil: a set escape (\w, \d) already added, no range end
        // No negation, and none of Swift's set operations (`--`, `&&`, `~~`) between members.
        guard bytes.first != UInt8(ascii: "^") else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard !["--", "&&", "~~"].contains(where: { text.contains($0) }) else { return nil }
        while let byte = bytes.popFirst() {
            if byte == UInt8(ascii: "]") { break }
            guard Self.isPrintable(byte) else { return nil }
            if byte == UInt8(ascii: "\\") {
                guard let escaped = bytes.popFirst() else { return nil }
                switch escaped {
                case UInt8(ascii: "w"):
                    add(UInt8(ascii: "a"), UInt8(ascii: "z")); add(UInt8(ascii: "A"), UInt8(ascii: "Z"))
                    add(UInt8(ascii: "0"), UInt8(ascii: "9")); add(UInt8(ascii: "_"), UInt8(ascii: "_"))
                    members.append(nil)
                case UInt8(ascii: "d"):
                    add(UInt8(ascii: "0"), UInt8(ascii: "9"))
                    members.append(nil)
                case let punctuation where Self.isPrintable(punctuation) && !Self.isAlphanumeric(punctuation):
                    members.append(punctuation)
                default:
                    return nil
                }
                continue
            }
            // `a-z`: the last member and the byte after `-`; a `-` first or last is itself.
            if byte == UInt8(ascii: "-"), let from = members.last ?? nil, let to = bytes.first, to != UInt8(ascii: "]") {
                bytes.removeFirst()
                guard to != UInt8(ascii: "\\"), to != UInt8(ascii: "["), Self.isPrintable(to), from <= to else { return nil }
                members.removeLast()
                add(from, to)
                members.append(nil)
                continue
            }
            guard byte != UInt8(ascii: "[") else { return nil }
            members.append(byte)
        }
        for case let member? in members { add(member, member) }
        guard low != 0 || high != 0 else { return nil }
        // The quantifier: all that is left.
        let quantifier = String(decoding: bytes, as: UTF8.self)
        switch quantifier {
        case "+": (minimum, maximum) = (1, .max)
        case "*": (minimum, maximum) = (0, .max)
        default:
            guard quantifier.hasPrefix("{"), quantifier.hasSuffix("}") else { return nil }
            let bounds = quantifier.dropFirst().dropLast().split(separator: ",", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let from = Int(bounds[0]), from >= 0 else { return nil }
            if bounds.count == 1 {
                (minimum, maximum) = (from, from)
            } else if bounds[1].isEmpty {
                (minimum, maximum) = (from, .max)
            } else {
                guard let to = Int(bounds[1]), to >= from else { return nil }
                (minimum, maximum) = (from, to)
            }
        }
        self.low = low
        self.high = high
    }

    /// True when `value` certainly matches; false when only `Regex` can say.
    func accepts(_ value: String) -> Bool {
        let bytes = value.utf8
        guard bytes.count >= minimum, bytes.count <= maximum else { return false }
        return bytes.allSatisfy { byte in
            byte < 64 ? low & (1 << UInt64(byte)) != 0 : byte < 128 && high & (1 << UInt64(byte - 64)) != 0
        }
    }

    private static func isPrintable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10
    }
}
