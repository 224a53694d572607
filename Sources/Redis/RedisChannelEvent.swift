/// What a channel subscription (``RedisClient/subscribe(to:)``) emits.
///
/// `.subscribed` comes first, once Redis has confirmed the subscription, and again after every
/// reconnect has re-established it: from each `.subscribed` on no message is missed until
/// the next one, so the moment to (re)read state that the messages update. Messages published
/// while the client was disconnected are lost: that is what the repeated `.subscribed` says.
///
/// ```
/// --subscribed--message(a)--message(b)--(Redis restarts)--subscribed--message(c)--
/// ```
///
/// ```swift
/// client.subscribe(to: "fleet:reload")
///     .sink { event in
///         switch event {
///         case .subscribed: refreshFromRedis()
///         case .message(let payload): apply(payload)
///         }
///     }
/// ```
public enum RedisChannelEvent: Sendable, Hashable {
    /// The subscription is in place (first, and again after each reconnect).
    case subscribed
    /// A message's payload, as published (binary-safe).
    case message([UInt8])

    /// The payload of a message, or nil for `.subscribed`: `.compactMap(\.payload)`.
    public var payload: [UInt8]? {
        if case .message(let payload) = self { return payload }
        return nil
    }
}
