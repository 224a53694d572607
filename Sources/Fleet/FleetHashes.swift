import Crypto
import HTTPCore

/// SHA-256, for names that must not reveal what they name: a fleet keeps a live stream's
/// location in Redis under the digest of its id, so reading Redis gives nobody an id to
/// control a stream with. (swift-crypto, never hand-written.)
///
/// ```swift
/// Digest.sha256Hex(Array(streamID.utf8))   // 64 hex digits
/// ```
enum Digest {
    /// The digest as 64 lowercase hex digits.
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        LowercaseHex.string(bytes: Array(SHA256.hash(data: bytes)))
    }
}

/// HMAC-SHA256 (swift-crypto): the replicas of a fleet sign everything they write to Redis
/// with their shared secret, so a Redis client without it cannot pass a message or a value of
/// its own for one of theirs.
///
/// ```swift
/// MessageAuthentication.sha256Hex(key: secret, message: bytes)               // 64 hex digits
/// MessageAuthentication.isValid(hexCode: received, key: secret, message: bytes)  // constant time
/// ```
enum MessageAuthentication {
    /// The 32-byte HMAC-SHA256 of `message` under `key`.
    static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// The code as 64 lowercase hex digits.
    static func sha256Hex(key: [UInt8], message: [UInt8]) -> [UInt8] {
        Array(LowercaseHex.string(bytes: sha256(key: key, message: message)).utf8)
    }

    /// Whether `hexCode` (64 hex digits) is the HMAC-SHA256 of `message` under `key`, compared
    /// by swift-crypto in constant time: a check must not tell an attacker how many of a
    /// forged code's leading bytes were right.
    static func isValid(hexCode: some Collection<UInt8>, key: [UInt8], message: [UInt8]) -> Bool {
        guard hexCode.count == 64 else { return false }
        var code: [UInt8] = []
        code.reserveCapacity(32)
        var digits = hexCode.makeIterator()
        while let high = digits.next(), let low = digits.next() {
            guard let high = HTTPSyntax.hexValue(high), let low = HTTPSyntax.hexValue(low) else { return false }
            code.append(high << 4 | low)
        }
        return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: message, using: SymmetricKey(data: key))
    }
}
