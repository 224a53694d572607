import HTTPCore

/// The id of one live stream: 128 random bits as 32 lowercase hex digits, unguessable, so
/// knowing a stream's id is what entitles a client to poke its triggers and inputs. A secret,
/// then: logs and error messages name a stream by its ``redacted`` form.
public struct StreamID: Hashable, Sendable, CustomStringConvertible {
    /// The 128 bits, held as numbers: a stream keeps its id for as long as it lives, and as
    /// text it was an allocation per subscriber. The text is made when asked for.
    private let high: UInt64
    private let low: UInt64

    public var description: String { LowercaseHex.string(high, low) }

    /// A fresh id from the system's cryptographic random source.
    public static func random() -> StreamID {
        var generator = SystemRandomNumberGenerator()
        return StreamID(high: generator.next(), low: generator.next())
    }

    /// The id in `text`, if it has the shape of one (anything else cannot name a stream).
    public init?(_ text: String) {
        guard text.utf8.count == 32, text.utf8.allSatisfy(LowercaseHex.isDigit) else {
            return nil
        }
        high = LowercaseHex.value(of: text.utf8.prefix(16))
        low = LowercaseHex.value(of: text.utf8.dropFirst(16))
    }

    private init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The first 8 hex digits and `…` (`7b10a2c4…`): enough to follow one stream through a
    /// log, 96 bits short of reaching it.
    public var redacted: String { Self.redacted(description[...]) }

    /// `text` (an id, or whatever a client sent in its place) cut to its first 8 characters
    /// and `…`; as it is when no longer than that.
    package static func redacted(_ text: Substring) -> String {
        text.count > 8 ? text.prefix(8) + "…" : String(text)
    }
}
