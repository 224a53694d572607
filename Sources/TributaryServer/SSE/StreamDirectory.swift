import Libevent
import Synchronization

/// Which worker holds each live stream, for the whole process.
///
/// A stream lives on the worker whose loop accepted its connection, but the client's
/// `POST /streams/{id}/triggers/…` may reach any worker (SO_REUSEPORT spreads connections),
/// so stream control looks the stream up here and runs on the holding worker's loop. The one
/// lock guards only the directory; everything it points to stays on its own loop.
public final class StreamDirectory: Sendable {
    public init() {}

    private let hubs = Mutex<[LoopBound<EventStreamHub>]>([])
    private let holders = Mutex<[StreamID: LoopBound<EventStreamHub>]>([:])

    /// A worker's hub joins the directory.
    func add(_ hub: LoopBound<EventStreamHub>) {
        hubs.withLock { $0.append(hub) }
    }

    /// Every worker's hub.
    var allHubs: [LoopBound<EventStreamHub>] { hubs.withLock { $0 } }

    func opened(_ id: StreamID, in hub: LoopBound<EventStreamHub>) {
        holders.withLock { $0[id] = hub }
    }

    func closed(_ id: StreamID) {
        _ = holders.withLock { $0.removeValue(forKey: id) }
    }

    /// The hub of the worker holding stream `id`, if it is live.
    func hub(holding id: StreamID) -> LoopBound<EventStreamHub>? {
        holders.withLock { $0[id] }
    }
}
