import Aggregation
import Libevent

/// The `snapshot` events of recent snapshots, formatted once per worker and shared by every
/// stream that sends them (``SharedBytes``): a state fanned out to 10,000 subscribers costs one
/// formatted event and one buffer, not 10,000 of each. Keyed by version, the few most recent
/// kept (streams of per-client views, such as /rows, each have versions of their own).
/// Loop-confined.
final class EventFrameCache {
    private static let capacity = 8
    /// Whole events of single-resource streams, by version.
    private var recent: [(version: String, frame: SharedBytes)] = []
    /// The tagged bodies of multiplexed streams' events, by resource, version and inputs.
    private var recentTagged: [(resource: String, version: String, inputs: [String: String], body: SharedBytes)] = []

    /// `event: snapshot`, `id: <version>`, the document as data: a single-resource stream's event.
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

    /// The data of a multiplexed stream's snapshot event, `{"resource":"<name>","data":<document>}`
    /// (with `"inputs":{…}` before `data` for a view with inputs), and the blank line that ends
    /// the event. Its head (`event:` and the client's own ``CompositeEventID``) is written
    /// before it by each stream.
    func taggedSnapshotBody(_ snapshot: Snapshot, of resource: String, answering inputs: [String: String]) -> SharedBytes {
        if let index = recentTagged.firstIndex(where: { $0.version == snapshot.version && $0.resource == resource && $0.inputs == inputs }) {
            let entry = recentTagged.remove(at: index)
            recentTagged.insert(entry, at: 0)
            return entry.body
        }
        var tagged = Array(#"{"resource":""#.utf8) + Array(JSONText.escaped(resource).utf8) + Array(#"","#.utf8)
        if !inputs.isEmpty { tagged += Array(#""inputs":"#.utf8) + EventStreamFraming.inputsObject(inputs).serialized + [UInt8(ascii: ",")] }
        tagged += Array(#""data":"#.utf8) + snapshot.json + [UInt8(ascii: "}")]
        let body = SharedBytes(EventStreamFormat.body(tagged))
        recentTagged.insert((resource, snapshot.version, inputs, body), at: 0)
        if recentTagged.count > Self.capacity { recentTagged.removeLast() }
        return body
    }
}
