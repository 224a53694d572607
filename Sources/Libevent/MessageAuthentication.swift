import CLibevent

/// HMAC-SHA256, through OpenSSL's libcrypto (linked for HTTPS already): the replicas of a
/// fleet sign everything they write to Redis with their shared secret, so a Redis client
/// without it cannot pass a message or a value of its own for one of theirs.
///
/// ```swift
/// let code = MessageAuthentication.sha256(key: secret, message: bytes)   // 32 bytes
/// MessageAuthentication.sha256Hex(key: secret, message: bytes)           // 64 hex digits
/// MessageAuthentication.constantTimeEqual(expected, received)            // no early exit
/// ```
public enum MessageAuthentication {
    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        key.withUnsafeBufferPointer { key in
            message.withUnsafeBufferPointer { message in
                _ = HMAC(EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count, &code, &length)
            }
        }
        precondition(length == UInt32(SHA256_DIGEST_LENGTH), "HMAC-SHA256 failed")
        return code
    }

    /// The code as 64 lowercase hex digits.
    public static func sha256Hex(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in sha256(key: key, message: message) {
            text.append(LowercaseHex.digit(byte >> 4))
            text.append(LowercaseHex.digit(byte & 0x0F))
        }
        return text
    }

    /// Whether `a` and `b` hold the same bytes, in a time that depends on their length only
    /// (OpenSSL's `CRYPTO_memcmp`): comparing a received code with the expected one must not
    /// tell an attacker how many of its leading bytes were right.
    public static func constantTimeEqual(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        let (a, b) = (Array(a), Array(b))
        guard a.count == b.count else { return false }
        return a.withUnsafeBufferPointer { a in
            b.withUnsafeBufferPointer { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}
