import Glibc

/// A string compared and hashed by its UTF-8 bytes. Swift's `String` equality is Unicode
/// canonical equivalence: `"K"` equals the Kelvin sign U+212A as `"é"` equals `"e"` + U+0301,
/// yet each is a different request to an upstream (percent-encoded, they are different bytes)
/// and may be a different document. Whatever keys something shared by a value from outside
/// (a parameter value, an item's id) keys it by this, so two values share only when an
/// upstream would see them as one.
///
/// ```swift
/// ExactText("K") == ExactText("\u{212A}")      // false ("K" == "\u{212A}" is true)
/// ```
public struct ExactText: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    public static func == (lhs: ExactText, rhs: ExactText) -> Bool {
        guard lhs.text.utf8.count == rhs.text.utf8.count else { return false }
        // Native strings compare as one memcmp of their bytes; others byte by byte.
        return lhs.text.utf8.withContiguousStorageIfAvailable { left in
            rhs.text.utf8.withContiguousStorageIfAvailable { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }.flatMap { $0 } ?? lhs.text.utf8.elementsEqual(rhs.text.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        Self.hash(text, into: &hasher)
    }

    /// Feeds `text`'s bytes, then its length (so that consecutive texts cannot run into each
    /// other), to `hasher`.
    public static func hash(_ text: String, into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(text.utf8.count)
    }

    public var description: String { text }
}
