/// Word-at-a-time searches through the bytes of a JSON string, for the parser and the
/// scanners: most of a document's bytes are inside strings, most strings are plain ASCII, and
/// checking eight bytes with one load and a few arithmetic operations costs less than eight
/// compares of each byte.
///
/// The tests are the classic SWAR ones: `x - 0x0101…` borrows into a byte's top bit where
/// that byte of `x` is 0 (with `0x2020…`, where it is below 0x20), and `& ~x` drops bytes
/// whose own top bit was set. The lowest flagged byte is exact (bytes above it may be flagged
/// falsely, by the borrow), which is all these searches read. Loads never pass the buffer's
/// end: the last few bytes are checked one at a time.
enum JSONStringBytes {
    /// The offset of the first byte from `position` on that needs a look: `"`, `\`, a control
    /// character (< 0x20) or a non-ASCII byte (≥ 0x80); `bytes.count` when there is none.
    static func endOfPlainText(in bytes: UnsafeBufferPointer<UInt8>, from position: Int) -> Int {
        var position = position
        while position + 8 <= bytes.count {
            let word = load(bytes, at: position)
            let quote = word ^ repeated(UInt8(ascii: "\""))
            let backslash = word ^ repeated(UInt8(ascii: "\\"))
            let flagged = ((quote &- repeated(0x01)) & ~quote
                | (backslash &- repeated(0x01)) & ~backslash
                | (word &- repeated(0x20)) & ~word
                | word) & repeated(0x80)
            if flagged != 0 { return position + flagged.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return position }
            position += 1
        }
        return position
    }

    /// The offset of the first `"` from `position` on; `bytes.count` when there is none.
    static func nextQuote(in bytes: UnsafeBufferPointer<UInt8>, from position: Int) -> Int {
        var position = position
        while position + 8 <= bytes.count {
            let quote = load(bytes, at: position) ^ repeated(UInt8(ascii: "\""))
            let flagged = (quote &- repeated(0x01)) & ~quote & repeated(0x80)
            if flagged != 0 { return position + flagged.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < bytes.count, bytes[position] != UInt8(ascii: "\"") { position += 1 }
        return position
    }

    /// Eight bytes from `position` (which has eight after it), the first in the low byte.
    @inline(__always)
    private static func load(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(bytes.baseAddress!).loadUnaligned(fromByteOffset: position, as: UInt64.self))
    }

    /// `byte` in each of a word's eight bytes.
    @inline(__always)
    private static func repeated(_ byte: UInt8) -> UInt64 { 0x0101_0101_0101_0101 &* UInt64(byte) }
}
