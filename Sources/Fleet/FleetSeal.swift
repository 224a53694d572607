import HTTPCore
import TributaryConfiguration

/// Signs everything a replica writes to Redis and checks everything it reads there, with the
/// fleet's shared ``ClusterSecret``: Redis is a meeting point, not a trusted party, and a
/// client that can write to it but lacks the secret cannot pass a message or a value of its
/// own for a replica's.
///
/// A sealed value is `<MAC> <time> <payload>`: the MAC as 64 hex digits, the time the
/// writer gives it (wall-clock milliseconds, in decimal), the payload as is. The MAC is
/// HMAC-SHA256 under the secret of the value's *context* (the key or channel it is written
/// to, which names its kind and subject), a zero byte, then `<time> <payload>`: a genuine
/// value replayed under another key or channel fails as surely as a forged one.
///
/// ```swift
/// let seal = FleetSeal(secret: secret, maximumAhead: .seconds(3))
/// let value = seal.seal(Array(replica.utf8), at: now, for: keys.lease("groups"))
/// switch seal.open(value, for: keys.lease("groups"), now: now) {
/// case .success(let opened): use(opened.time, opened.payload)
/// case .failure(let reason): count(reason)          // .mac, .future, .malformed, .tooLarge
/// }
/// ```
///
/// Replicas' clocks are assumed synchronised to well under `cluster.leaseTTL`: a time further
/// ahead of the reader's clock than ``maximumAhead`` is refused (``FleetRejection/future``),
/// so no remote number can push local state past what the reader's own clock will reach.
/// How old a value may be depends on its kind and is its reader's to judge.
struct FleetSeal {
    /// The fleet's name in Redis: 16 hex digits of the secret's HMAC of a fixed text. Keys and
    /// channels carry it (``ClusterKeys``), so fleets with other secrets on the same Redis and
    /// key prefix use other keys and never meet; it tells nothing of the secret.
    let fleet: String
    /// How far ahead of the reader's clock a time may be (milliseconds).
    let maximumAhead: UInt64
    private let key: [UInt8]

    private static let macLength = 64

    init(secret: ClusterSecret, maximumAhead: Duration) {
        key = secret.bytes
        self.maximumAhead = WallClock.milliseconds(maximumAhead)
        let name = MessageAuthentication.sha256Hex(key: secret.bytes, message: Array("tributary fleet".utf8))
        fleet = String(decoding: name.prefix(16), as: UTF8.self)
    }

    /// What ``open(_:for:now:maximumBytes:)`` found in a genuine value.
    struct Opened {
        /// The time its writer gave it.
        let time: UInt64
        let payload: ArraySlice<UInt8>
    }

    /// `payload` with time `time`, signed for `context`.
    func seal(_ payload: [UInt8], at time: UInt64, for context: String) -> [UInt8] {
        var signed = Array(String(time).utf8)
        signed.append(UInt8(ascii: " "))
        signed += payload
        var sealed = mac(of: signed[...], for: context)
        sealed.append(UInt8(ascii: " "))
        sealed += signed
        return sealed
    }

    /// The time and payload of `sealed`, a value read from `context`, when it is genuine and
    /// its time is not ahead of `now` by more than ``maximumAhead``; otherwise why not. A
    /// value longer than `maximumBytes` is refused before its MAC is computed.
    func open(
        _ sealed: [UInt8], for context: String, now: UInt64, maximumBytes: Int = 4096
    ) -> Result<Opened, FleetRejection> {
        guard sealed.count <= maximumBytes else { return .failure(.tooLarge) }
        let signedStart = Self.macLength + 1
        guard sealed.count > signedStart, sealed[Self.macLength] == UInt8(ascii: " ") else { return .failure(.malformed) }
        let signed = sealed[signedStart...]
        guard MessageAuthentication.isValid(hexCode: sealed[..<Self.macLength], key: key, message: message(of: signed, for: context)) else {
            return .failure(.mac)
        }
        guard let space = signed.firstIndex(of: UInt8(ascii: " ")), space > signed.startIndex, space - signed.startIndex <= 20,
              signed[..<space].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let time = UInt64(String(decoding: signed[..<space], as: UTF8.self)) else { return .failure(.malformed) }
        guard time <= now.addingSaturated(maximumAhead) else { return .failure(.future) }
        return .success(Opened(time: time, payload: sealed[(space + 1)...]))
    }

    /// The MAC of `signed` for `context`, as 64 hex digits.
    private func mac(of signed: ArraySlice<UInt8>, for context: String) -> [UInt8] {
        MessageAuthentication.sha256Hex(key: key, message: message(of: signed, for: context))
    }

    /// What is signed: the context, a zero byte, then `<time> <payload>`.
    private func message(of signed: ArraySlice<UInt8>, for context: String) -> [UInt8] {
        var message = Array(context.utf8)
        message.reserveCapacity(message.count + 1 + signed.count)
        message.append(0)
        message += signed
        return message
    }
}
