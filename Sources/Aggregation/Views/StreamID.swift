import HTTPCore

/// The id of one live stream: 128 random bits as 32 lowercase hex digits, unguessable, so
/// knowing a stream's id is what entitles a client to poke its triggers and inputs. A secret,
/// then: logs and error messages name a stream by its ``redacted`` form.
public struct StreamID: Hashable, Sendable, CustomStringConvertible {
    public let description: String

    /// A fresh id from the system's cryptographic random source.
    public static func random() -> StreamID {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return StreamID(description: LowercaseHex.string(high, low))
    }

    /// The id in `text`, if it has the shape of one (anything else cannot name a stream).
    public init?(_ text: String) {
        guard text.utf8.count == 32, text.utf8.allSatisfy(LowercaseHex.isDigit) else {
            return nil
        }
        description = text
    }

    private init(description: String) {
        self.description = description
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
