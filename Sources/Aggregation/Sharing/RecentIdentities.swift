
/// The identities of the callers a resource's reader saw last, so a client's next requests do
/// not each pay ``IdentityHasher``'s HMAC, the most of what forwarding cost an answer (about
/// 62k of the 89k instructions it added to an N=10 `/groups`: `Benchmarks/sharing-cost.sh`).
/// Up to ``limit`` per resource and worker, forgotten all at once when full: a flood of new
/// credentials costs what it cost without the cache, and never more memory than that.
/// Keyed by the subject and header values themselves, which stay in this process's memory
/// only, as the requests' own headers do, and compared by their bytes (``ExactText``): a
/// value canonically equivalent to another caller's (`é` composed or not) is another
/// credential, and must never be handed that caller's identity. Credentials longer than
/// ``longestKey`` bytes are hashed every time rather than kept: 1,024 headers of 16 KiB each
/// held 16 MiB per resource and worker in the part-3 attack run. Loop-confined.
package final class RecentIdentities {
    package static let limit = 1_024
    package static let longestKey = 2_048

    private let hasher: IdentityHasher
    private var identities: [ExactText: Identity] = [:]

    package init(hasher: IdentityHasher) {
        self.hasher = hasher
    }

    /// Identities remembered now.
    package var count: Int { identities.count }

    /// ``IdentityHasher/identity(subject:headers:)``, remembered.
    package func identity(subject: String?, headers: [(name: String, value: String)]) -> Identity {
        guard let key = Self.key(subject: subject, headers: headers) else { return hasher.identity(subject: subject, headers: headers) }
        let exact = ExactText(key)
        if let known = identities[exact] { return known }
        let identity = hasher.identity(subject: subject, headers: headers)
        if identities.count >= Self.limit { identities.removeAll(keepingCapacity: true) }
        identities[exact] = identity
        return identity
    }

    /// The key of a caller: `count:subject` (or `-`), then `|count:name count:value` per
    /// header, each part length-prefixed so that no two callers make one key; nil when longer
    /// than ``longestKey``. Written into one string of its measured size: interpolating and
    /// appending the parts cost about 3,000 instructions per forwarded request.
    package static func key(subject: String?, headers: [(name: String, value: String)]) -> String? {
        let decimalDigits = 20
        var capacity = subject.map { decimalDigits + 1 + $0.utf8.count } ?? 1
        for header in headers { capacity += 1 + 2 * (decimalDigits + 1) + header.name.utf8.count + header.value.utf8.count }
        let key = String(unsafeUninitializedCapacity: capacity) { buffer in
            var end = 0
            func put(_ byte: UInt8) {
                buffer[end] = byte
                end += 1
            }
            func put(decimal value: Int) {
                var digits = 1
                var rest = value
                while rest >= 10 {
                    rest /= 10
                    digits += 1
                }
                rest = value
                for index in stride(from: end + digits - 1, through: end, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                end += digits
            }
            func put(counted text: String) {
                put(decimal: text.utf8.count)
                put(UInt8(ascii: ":"))
                let copied = text.utf8.withContiguousStorageIfAvailable { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[end..<end + bytes.count]).initialize(fromContentsOf: bytes)
                    end += bytes.count
                }
                if copied == nil { for byte in text.utf8 { put(byte) } }
            }
            if let subject { put(counted: subject) } else { put(UInt8(ascii: "-")) }
            for header in headers {
                put(UInt8(ascii: "|"))
                put(counted: header.name)
                put(counted: header.value)
            }
            return end
        }
        return key.utf8.count <= longestKey ? key : nil
    }
}
