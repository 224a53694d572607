import Aggregation
import Libevent

/// The `snapshot` events of recent snapshots, formatted once per worker and shared by every
/// stream that sends them (``SharedBytes``): a state fanned out to 10,000 subscribers costs one
/// formatted event and one buffer, not 10,000 of each. Keyed by version, the few most recent
/// kept (streams of per-client views, such as /rows, each have versions of their own).
/// Loop-confined.
final class EventFrameCache {
    private static let capacity = 8
    private var recent: [(version: String, frame: SharedBytes)] = []

    func snapshotFrame(_ snapshot: Snapshot) -> SharedBytes {
        if let index = recent.firstIndex(where: { $0.version == snapshot.version }) {
            let entry = recent.remove(at: index)
            recent.insert(entry, at: 0)
            return entry.frame
        }
        let frame = SharedBytes(EventStreamFormat.event("snapshot", id: snapshot.version, data: snapshot.json))
        recent.insert((snapshot.version, frame), at: 0)
        if recent.count > Self.capacity { recent.removeLast() }
        return frame
    }
}
