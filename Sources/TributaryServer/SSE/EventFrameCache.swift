import HTTPCore
import Aggregation
import HTTPServer

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
    private var recentBodies: [(resource: String, version: String, inputs: [String: String], body: SharedBytes)] = []
    /// Multiplexed streams' events sent lately, by composite id, resource (which name the
    /// version) and inputs, whole once sent twice.
    private var recentTagged: [(id: String, resource: String, version: String, inputs: [String: String], whole: SharedBytes?)] = []

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

    /// A multiplexed stream's snapshot event: `event: snapshot`, `id: <composite id>` (the
    /// versions its client has), data `{"resource":"<name>","data":<document>}` (with
    /// `"inputs":{…}` before `data` for a view with inputs: the values the document answers),
    /// as one chunk or as a head and a body.
    ///
    /// The body is formatted once per version and shared by every stream that sends it, whatever
    /// the other versions its client has. An event sent a second time with the same id (many
    /// clients with the same versions: every client of shared resources) is then kept whole,
    /// so each further connection holds one reference while the event waits for its socket,
    /// not two (libevent gives each reference a buffer of at least 1 KiB). Clients whose ids
    /// all differ (per-client views) never get a whole event made, so no document is copied
    /// per client.
    func taggedSnapshot(_ snapshot: Snapshot, of resource: String, answering inputs: [String: String], id: String) -> TaggedEvent {
        if let index = recentTagged.firstIndex(where: {
            $0.id == id && $0.resource == resource && $0.version == snapshot.version && $0.inputs == inputs
        }) {
            var entry = recentTagged.remove(at: index)
            if entry.whole == nil {
                entry.whole = SharedBytes(EventStreamFormat.head("snapshot", id: id)
                                          + EventStreamFormat.body(tagged(snapshot, of: resource, answering: inputs)))
            }
            recentTagged.insert(entry, at: 0)
            return .whole(entry.whole!)
        }
        recentTagged.insert((id, resource, snapshot.version, inputs, nil), at: 0)
        if recentTagged.count > Self.capacity { recentTagged.removeLast() }
        return .parts(head: SharedBytes(EventStreamFormat.head("snapshot", id: id)),
                      body: taggedBody(snapshot, of: resource, answering: inputs))
    }

    /// A multiplexed stream's event, in one chunk or two.
    enum TaggedEvent {
        case whole(SharedBytes)
        case parts(head: SharedBytes, body: SharedBytes)
    }

    /// The data of a multiplexed stream's snapshot event and the blank line that ends it.
    private func taggedBody(_ snapshot: Snapshot, of resource: String, answering inputs: [String: String]) -> SharedBytes {
        if let index = recentBodies.firstIndex(where: { $0.version == snapshot.version && $0.resource == resource && $0.inputs == inputs }) {
            let entry = recentBodies.remove(at: index)
            recentBodies.insert(entry, at: 0)
            return entry.body
        }
        let body = SharedBytes(EventStreamFormat.body(tagged(snapshot, of: resource, answering: inputs)))
        recentBodies.insert((resource, snapshot.version, inputs, body), at: 0)
        if recentBodies.count > Self.capacity { recentBodies.removeLast() }
        return body
    }

    /// `{"resource":"<name>","inputs":{…},"data":<document>}`, without `inputs` when there are none.
    private func tagged(_ snapshot: Snapshot, of resource: String, answering inputs: [String: String]) -> [UInt8] {
        var tagged = Array(#"{"resource":"#.utf8)
        JSONWriter.appendString(resource, to: &tagged)
        tagged.append(UInt8(ascii: ","))
        if !inputs.isEmpty { tagged += Array(#""inputs":"#.utf8) + EventStreamFraming.inputsObject(inputs).serialized + [UInt8(ascii: ",")] }
        return tagged + Array(#""data":"#.utf8) + snapshot.json + [UInt8(ascii: "}")]
    }
}
