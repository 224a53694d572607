/// Eight bytes at a time: the classic SWAR tests that mark, in one 64-bit word, which of its
/// bytes are below a limit or equal to a byte. The HTTP syntax checks (``HTTPSyntax``) and the
/// JSON string searches (Aggregation's `JSONStringBytes`) scan with them: most bytes pass, and
/// one load and a few arithmetic operations per word cost less than eight compares.
///
/// A mark is a byte's high bit. `word - 0x0101…01 * limit` borrows through a byte exactly
/// when it is below `limit` (or when a borrow came from the byte before it); `& ~word` drops
/// bytes whose own high bit was set. So the lowest mark is exact and no mark is set without a
/// matching byte at or before it: a search reads the lowest mark only
/// (`trailingZeroBitCount / 8`), never the ones above it.
///
/// Public and `@inlinable` so that Aggregation's searches inline them (as `package`, they were
/// called, not inlined, in every byte search of an answer).
public enum ByteWords {
    /// Eight bytes from `offset`, which must have eight after it, the first in the low byte.
    @inlinable @inline(__always)
    public static func load(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.baseAddress!.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// A word whose eight bytes are all `byte`.
    @inlinable @inline(__always)
    public static func repeating(_ byte: UInt8) -> UInt64 { 0x0101_0101_0101_0101 &* UInt64(byte) }

    /// Marks of the bytes of `word` below `limit` (at most 0x80).
    @inlinable @inline(__always)
    public static func below(_ limit: UInt8, in word: UInt64) -> UInt64 {
        (word &- repeating(limit)) & ~word & repeating(0x80)
    }

    /// Marks of the bytes of `word` equal to `byte` (those that `^ byte` makes zero).
    @inlinable @inline(__always)
    public static func equal(to byte: UInt8, in word: UInt64) -> UInt64 {
        below(1, in: word ^ repeating(byte))
    }

    /// Marks of the bytes of `word` of 0x80 and up (non-ASCII in UTF-8).
    @inlinable @inline(__always)
    public static func nonASCII(in word: UInt64) -> UInt64 { word & repeating(0x80) }
}
