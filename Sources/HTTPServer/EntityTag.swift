/// Entity tags (RFC 9110 §8.8.3) and the `If-None-Match` check (§13.1.2).
///
/// ```swift
/// EntityTag.strong("0a1b2c")                                   // "\"0a1b2c\""
/// EntityTag.ifNoneMatch(#"W/"x", "0a1b2c""#, matches: "0a1b2c")  // true
/// ```
public enum EntityTag {
    /// The strong tag of `opaque`: `"<opaque>"`.
    public static func strong(_ opaque: String) -> String { tag(opaque, prefix: "\"") }

    /// The weak tag of `opaque`: `W/"<opaque>"` (the same content in another encoding).
    public static func weak(_ opaque: String) -> String { tag(opaque, prefix: "W/\"") }

    /// `prefix`, `opaque`, `"`, in one allocation (joined with `+`, a tag took two or three:
    /// every JSON answer has one).
    private static func tag(_ opaque: String, prefix: StaticString) -> String {
        var tag = ""
        tag.reserveCapacity(prefix.utf8CodeUnitCount + opaque.utf8.count + 1)
        tag += prefix.description
        tag += opaque
        tag += "\""
        return tag
    }

    /// Whether an `If-None-Match` value holds the tag `opaque` (with or without `W/`: the
    /// comparison is weak, as §13.1.2 asks), or is `*`. A list that is not well formed
    /// matches nothing from the first malformed entry on: the answer is then a full one,
    /// which is never wrong.
    public static func ifNoneMatch(_ header: String, matches opaque: String) -> Bool {
        let text = Array(header.utf8)
        let target = Array(opaque.utf8)
        var index = 0
        func skipSeparators() {
            while index < text.count, [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: ",")].contains(text[index]) { index += 1 }
        }
        skipSeparators()
        if index < text.count, text[index] == UInt8(ascii: "*") {
            index += 1
            skipSeparators()
            return index == text.count
        }
        while index < text.count {
            if text[index...].starts(with: "W/".utf8) { index += 2 }
            guard index < text.count, text[index] == UInt8(ascii: "\"") else { return false }
            // A tag's characters exclude the double quote (§8.8.3), commas included.
            guard let end = text[(index + 1)...].firstIndex(of: UInt8(ascii: "\"")) else { return false }
            if text[(index + 1)..<end].elementsEqual(target) { return true }
            index = end + 1
            skipSeparators()
        }
        return false
    }
}
