import HTTPCore

/// Word-at-a-time searches through the bytes of a JSON string, for the parser and the
/// scanners: most of a document's bytes are inside strings, most strings are plain ASCII, and
/// checking eight bytes with one load and a few arithmetic operations (``ByteWords``, the same
/// tests the HTTP syntax checks use) costs less than eight compares of each byte. Loads never
/// pass the buffer's end: the last few bytes are checked one at a time.
enum JSONStringBytes {
    /// The offset of the first byte from `position` on that needs a look: `"`, `\`, a control
    /// character (< 0x20) or a non-ASCII byte (≥ 0x80); `bytes.count` when there is none.
    /// Inlined into its two callers (the scanner's and the parser's string loops): most
    /// strings are a word or two long, and a call per string cost about as much as its search.
    @inline(__always)
    static func endOfPlainText(in bytes: UnsafeBufferPointer<UInt8>, from position: Int) -> Int {
        let raw = UnsafeRawBufferPointer(bytes)
        var position = position
        while position + 8 <= bytes.count {
            let word = ByteWords.load(raw, at: position)
            let flagged = ByteWords.equal(to: UInt8(ascii: "\""), in: word) | ByteWords.equal(to: UInt8(ascii: "\\"), in: word)
                | ByteWords.below(0x20, in: word) | ByteWords.nonASCII(in: word)
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
        let raw = UnsafeRawBufferPointer(bytes)
        var position = position
        while position + 8 <= bytes.count {
            let flagged = ByteWords.equal(to: UInt8(ascii: "\""), in: ByteWords.load(raw, at: position))
            if flagged != 0 { return position + flagged.trailingZeroBitCount / 8 }
            position += 8
        }
        while position < bytes.count, bytes[position] != UInt8(ascii: "\"") { position += 1 }
        return position
    }
}
