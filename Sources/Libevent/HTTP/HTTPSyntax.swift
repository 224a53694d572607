import Glibc

/// The bytes of HTTP/1.1's grammar (RFC 9110 §5.6), for what the server reads (request
/// framing, query strings) and what the upstream client sends and reads. Plain switches: they
/// run for every header byte.
enum HTTPSyntax {
    /// A `tchar`: what a header name (and a token) is made of.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        // ! # $ % & ' * + - . digits letters ^ _ ` | ~
        case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7A, 0x7C, 0x7E: true
        default: false
        }
    }

    /// A control byte other than HTAB: never part of a field value or reason phrase.
    @inline(__always)
    static func isForbiddenInValue(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// Whether `bytes` spell `lowercase`, ASCII letters in either case (header names, tokens).
    /// Over raw bytes, not any collection: the response parser calls it for every header.
    @inline(__always)
    static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        // The length first: most names compared differ in it.
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count {
            let byte = bytes[index]
            if (byte &- 0x41 < 26 ? byte | 0x20 : byte) != expected[index] { return false }
        }
        return true
    }

    /// The value of a hex digit, or nil.
    @inline(__always)
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    /// The index of the first `byte` in `bytes`, or nil (`memchr`).
    @inline(__always)
    static func firstIndex(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
              let found = memchr(base + start, Int32(byte), bytes.count - start) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }
}
