import CLibevent

/// SHA-256, through OpenSSL's libcrypto (linked for HTTPS already), for names that must not
/// reveal what they name: a fleet keeps a live stream's location in Redis under the digest of
/// its id, so reading Redis gives nobody an id to control a stream with.
///
/// ```swift
/// Digest.sha256Hex(Array(streamID.utf8))   // 64 hex digits
/// ```
public enum Digest {
    /// The 32-byte digest of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            _ = SHA256(input.baseAddress, input.count, &digest)
        }
        return digest
    }

    /// The digest as 64 lowercase hex digits.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in sha256(bytes) {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
