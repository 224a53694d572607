/// 64-bit values as 16 lowercase hex digits each, leading zeros kept: the shape of W3C trace
/// and span ids, snapshot versions and stream ids. Written in place, digit by computed digit
/// (a table of digits cost a global's access and a bounds check per digit; `String(radix:)`
/// and padding made three strings).
public enum LowercaseHex {
    /// Writes the 16 digits of `value` into `buffer` from `offset`, which must leave room for them.
    /// Always inlined: as a call, each upstream call's `traceparent` cost twice as much.
    @inlinable @inline(__always)
    public static func write(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && buffer.count - offset >= 16, "no room for 16 hex digits")
        for index in 0..<16 {
            buffer[offset + index] = digit(UInt8(truncatingIfNeeded: value >> (60 - 4 * UInt64(index))) & 0xF)
        }
    }

    /// Writes the 2 digits of `value` into `buffer` from `offset`, which must leave room for them.
    @inlinable @inline(__always)
    public static func write(_ value: UInt8, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        precondition(offset >= 0 && buffer.count - offset >= 2, "no room for 2 hex digits")
        buffer[offset] = digit(value >> 4)
        buffer[offset + 1] = digit(value & 0xF)
    }

    @inlinable @inline(__always)
    static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
    }

    /// The value of at most 16 digits, each of which ``isDigit(_:)`` (checked by the caller).
    public static func value(of digits: some Collection<UInt8>) -> UInt64 {
        precondition(digits.count <= 16, "more than 16 hex digits")
        return digits.reduce(0) { value, digit in
            value << 4 | UInt64(digit <= UInt8(ascii: "9") ? digit - UInt8(ascii: "0") : digit - UInt8(ascii: "a") + 10)
        }
    }

    /// The 16 digits of `value`.
    public static func string(_ value: UInt64) -> String {
        String(unsafeUninitializedCapacity: 16) { buffer in
            write(value, into: buffer, at: 0)
            return 16
        }
    }

    /// The 32 digits of `high` then `low`, in one string.
    public static func string(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            write(high, into: buffer, at: 0)
            write(low, into: buffer, at: 16)
            return 32
        }
    }

    /// Two digits per byte of `bytes` (a digest, a MAC), in one string.
    public static func string(bytes: some Collection<UInt8>) -> String {
        String(unsafeUninitializedCapacity: 2 * bytes.count) { buffer in
            var offset = 0
            for byte in bytes {
                write(byte, into: buffer, at: offset)
                offset += 2
            }
            return offset
        }
    }

    /// Whether `byte` is one of the digits written here: 0–9 or a–f.
    @inlinable
    public static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}
