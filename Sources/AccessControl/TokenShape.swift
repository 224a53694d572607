/// What a bearer token must look like before jwt-kit reads it: three base64url parts, the
/// header's and the payload's JSON nested at most ``maximumNesting`` deep.
///
/// Why before: jwt-kit decodes the header and the payload with Foundation's `JSONDecoder`
/// before any signature is checked, and Swift 6.3.1's decoder traps (it does not throw) on a
/// text that ends at exactly its 513th nested array, building the error's source location.
/// One unsigned request would end every worker of the process. No JWT's claims nest more
/// than a few levels, so anything deeper is refused here, as a token that is not a JWT.
///
/// ```swift
/// TokenShape.problem(Array(token.utf8))    // nil, or why it is not a JWT
/// ```
enum TokenShape {
    static let maximumNesting = 32

    /// Why `token` cannot be a JWT the service reads (nil: it may be).
    static func problem(_ token: [UInt8]) -> String? {
        let parts = token.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { return "it is not three base64url parts" }
        for part in parts.prefix(2) {
            guard let json = base64URLDecoded(part) else { return "it is not base64url" }
            guard nesting(of: json) <= maximumNesting else { return "its JSON nests deeper than \(maximumNesting)" }
        }
        return nil
    }

    /// The bytes of base64url text (RFC 4648 §5), padding optional; nil for any other byte.
    static func base64URLDecoded(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            buffer = buffer << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return bytes
    }

    /// How deep `json`'s arrays and objects nest at most (brackets inside strings do not
    /// count), whether or not the text is valid JSON.
    static func nesting(of json: [UInt8]) -> Int {
        var depth = 0, deepest = 0
        var inString = false, escaped = false
        for byte in json {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
            default: break
            }
        }
        return deepest
    }
}
