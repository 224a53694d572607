/// Someone listening to one channel: a subscription of ``RedisClient/subscribe(to:)``.
protocol ChannelListener: AnyObject {
    func receive(_ event: RedisChannelEvent)
}

/// A client's pub/sub bookkeeping: which channels its listeners want, one `SUBSCRIBE` per
/// channel on the pub/sub link however many listeners share it, and where each channel stands
/// on Redis. Loop-confined.
///
/// Redis answers every `SUBSCRIBE` and `UNSUBSCRIBE` with one confirmation per channel, in
/// order, so counting the ones still to come tells when the latest change has taken effect:
/// a `subscribe` confirmation that leaves none outstanding makes the channel's listeners
/// live (they get `.subscribed`, then its messages). A listener that joins while a change is
/// in flight waits for that confirmation; a listener that joins a live channel is live at once.
///
/// ```
/// add(a) ─▶ SUBSCRIBE ch ─▶ "subscribe ch" ─▶ a: .subscribed, messages…
/// add(b)                  (shared: no second SUBSCRIBE)      b: .subscribed at once
/// remove(a), remove(b) ─▶ UNSUBSCRIBE ch
/// link lost ─▶ nothing live ─▶ link ready ─▶ SUBSCRIBE every wanted channel, in one command
/// ```
final class ChannelSubscriptions {
    private struct Entry {
        let listener: any ChannelListener
        var isLive = false
    }

    private struct Channel {
        var entries: [Entry] = []
        /// `SUBSCRIBE`/`UNSUBSCRIBE` sent on this connection and not yet confirmed.
        var outstanding = 0
        /// The last one sent was `SUBSCRIBE`: Redis is, or will be, subscribed.
        var subscribeSent = false
        /// Redis confirmed the subscription and nothing is in flight.
        var isConfirmed = false
    }

    private let link: RedisLink
    private var channels: [[UInt8]: Channel] = [:]
    /// Channels subscribed again since the link became ready, still unconfirmed: until they
    /// are, the client does not call itself connected.
    private(set) var awaitingResubscription: Set<[UInt8]> = []

    init(link: RedisLink) {
        self.link = link
    }

    func add(_ listener: any ChannelListener, to name: [UInt8]) {
        var channel = channels[name] ?? Channel()
        var entry = Entry(listener: listener)
        if link.isReady {
            if !channel.subscribeSent {
                send("SUBSCRIBE", [name], to: &channel)
            } else if channel.isConfirmed {
                entry.isLive = true
            }
        }
        channel.entries.append(entry)
        channels[name] = channel
        if entry.isLive { listener.receive(.subscribed) }
    }

    func remove(_ listener: any ChannelListener, from name: [UInt8]) {
        guard var channel = channels[name] else { return }
        channel.entries.removeAll { $0.listener === listener }
        if channel.entries.isEmpty {
            awaitingResubscription.remove(name)
            if channel.subscribeSent && link.isReady { send("UNSUBSCRIBE", [name], to: &channel) }
        }
        store(channel, name)
    }

    /// A new connection: subscribe to every channel someone listens to.
    func linkBecameReady() {
        let wanted = channels.filter { !$0.value.entries.isEmpty }.map(\.key)
        guard !wanted.isEmpty, link.sendPubSub([Array("SUBSCRIBE".utf8)] + wanted) else { return }
        for name in wanted {
            channels[name]!.outstanding = 1
            channels[name]!.subscribeSent = true
        }
        awaitingResubscription = Set(wanted)
    }

    /// The connection is gone, and every subscription with it.
    func linkWasLost() {
        awaitingResubscription = []
        for name in Array(channels.keys) {
            var channel = channels[name]!
            channel.outstanding = 0
            channel.subscribeSent = false
            channel.isConfirmed = false
            for index in channel.entries.indices { channel.entries[index].isLive = false }
            store(channel, name)
        }
    }

    /// A pub/sub reply: `[kind, channel, count or payload]`.
    func received(_ reply: RedisReply) {
        guard let parts = reply.array, parts.count == 3, let kind = parts[0].text?.lowercased(),
              let name = parts[1].bytes, var channel = channels[name]
        else { return }
        switch kind {
        case "message":
            guard let payload = parts[2].bytes else { return }
            for entry in channel.entries where entry.isLive { entry.listener.receive(.message(payload)) }
        case "subscribe":
            channel.outstanding -= 1
            guard channel.outstanding == 0 else { return store(channel, name) }
            channel.isConfirmed = true
            awaitingResubscription.remove(name)
            let waiting = channel.entries.filter { !$0.isLive }.map(\.listener)
            for index in channel.entries.indices { channel.entries[index].isLive = true }
            store(channel, name)
            for listener in waiting { listener.receive(.subscribed) }
        case "unsubscribe":
            channel.outstanding -= 1
            if channel.outstanding == 0 { channel.isConfirmed = false }
            store(channel, name)
        default:
            break
        }
    }

    private func send(_ command: String, _ names: [[UInt8]], to channel: inout Channel) {
        guard link.sendPubSub([Array(command.utf8)] + names) else { return }
        channel.outstanding += 1
        channel.subscribeSent = command == "SUBSCRIBE"
        channel.isConfirmed = false
        for index in channel.entries.indices { channel.entries[index].isLive = false }
    }

    /// Keeps a channel while someone listens or a confirmation is due.
    private func store(_ channel: Channel, _ name: [UInt8]) {
        channels[name] = channel.entries.isEmpty && channel.outstanding == 0 ? nil : channel
    }
}
