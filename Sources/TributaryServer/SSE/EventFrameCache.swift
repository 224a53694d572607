import HTTPCore
import Aggregation
import HTTPServer

/// The `snapshot` and `patch` events of recent changes, formatted once per worker and shared
/// by every stream that sends them (``SharedBytes``): a state fanned out to 10,000
/// subscribers costs one formatted event and one buffer, not 10,000 of each. Keyed by
/// version (a patch by the versions it goes from and to), the few most recent kept (streams
/// of per-client views, such as /rows, each have versions of their own). Loop-confined.
///
/// A patch is computed here, once per change and worker, by the first stream that sends it:
/// the documents parsed (the newest few kept parsed, so the next change parses only its new
/// one), diffed (``JSONDiff``), and the patch kept only when it is smaller than the document
/// (else the stream sends the snapshot). A client that skipped versions (a slow reader gets
/// the latest state, not each one) gets the patch from the version it has; clients that
/// skipped the same ones share it.
final class EventFrameCache {
    private static let capacity = 8
    /// Whole events of single-resource streams, by version (a patch's: and the version it is from).
    private var recent: [(key: EventKey, frame: SharedBytes)] = []
    /// The tagged bodies of multiplexed streams' events, by resource, version (and the one a
    /// patch is from) and inputs.
    private var recentBodies: [(key: EventKey, inputs: [String: String], body: SharedBytes)] = []
    /// Multiplexed streams' events sent lately, by composite id, resource (which name the
    /// version) and inputs, whole once sent twice.
    private var recentTagged: [(id: String, key: EventKey, inputs: [String: String], whole: SharedBytes?)] = []
    /// Patches, by resource and versions: the patch's text, nil when it is not smaller than the document.
    private var recentPatches: [(key: EventKey, patch: [UInt8]?)] = []
    /// The newest documents, parsed for diffing, by version.
    private var recentDocuments: [(version: String, document: JSON)] = []

    /// What an event shows: a resource's document at `version`, whole or (`from` a version) as a patch.
    private struct EventKey: Equatable {
        let resource: String
        let version: String
        let from: String?

        var name: String { from == nil ? "snapshot" : "patch" }
    }

    /// `event: snapshot`, `id: <version>`, the document as data: a single-resource stream's event.
    func snapshotFrame(_ snapshot: Snapshot, of resource: String) -> SharedBytes {
        frame(EventKey(resource: resource, version: snapshot.version, from: nil)) { snapshot.json }
    }

    /// `event: patch`, `id: <version>`, data the JSON Patch that makes `snapshot` of `base`:
    /// a single-resource stream's event; nil when the patch would not be smaller than the
    /// document (the stream then sends the snapshot).
    func patchFrame(from base: Snapshot, to snapshot: Snapshot, of resource: String, diff: JSONDiff) -> SharedBytes? {
        guard let patch = patch(from: base, to: snapshot, of: resource, diff: diff) else { return nil }
        return frame(EventKey(resource: resource, version: snapshot.version, from: base.version)) { patch }
    }

    private func frame(_ key: EventKey, data: () -> [UInt8]) -> SharedBytes {
        if let index = recent.firstIndex(where: { $0.key == key }) {
            let entry = recent.remove(at: index)
            recent.insert(entry, at: 0)
            return entry.frame
        }
        let frame = SharedBytes(EventStreamFormat.event(key.name, id: key.version, data: data()))
        Self.remember((key, frame), in: &recent)
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
        tagged(EventKey(resource: resource, version: snapshot.version, from: nil), answering: inputs, id: id) {
            Self.tagged(resource, answering: inputs, member: "data", value: snapshot.json)
        }
    }

    /// A multiplexed stream's patch event, shared as ``taggedSnapshot(_:of:answering:id:)``
    /// is: `event: patch`, `id: <composite id>`, data `{"resource":"<name>","patch":[…]}`
    /// (with `inputs` as a snapshot has them); nil when the patch would not be smaller than
    /// the document.
    func taggedPatch(
        from base: Snapshot, to snapshot: Snapshot, of resource: String, diff: JSONDiff, answering inputs: [String: String], id: String
    ) -> TaggedEvent? {
        guard let patch = patch(from: base, to: snapshot, of: resource, diff: diff) else { return nil }
        return tagged(EventKey(resource: resource, version: snapshot.version, from: base.version), answering: inputs, id: id) {
            Self.tagged(resource, answering: inputs, member: "patch", value: patch)
        }
    }

    /// A multiplexed stream's event, in one chunk or two.
    enum TaggedEvent {
        case whole(SharedBytes)
        case parts(head: SharedBytes, body: SharedBytes)
    }

    private func tagged(_ key: EventKey, answering inputs: [String: String], id: String, data: () -> [UInt8]) -> TaggedEvent {
        if let index = recentTagged.firstIndex(where: { $0.id == id && $0.key == key && $0.inputs == inputs }) {
            var entry = recentTagged.remove(at: index)
            if entry.whole == nil {
                entry.whole = SharedBytes(EventStreamFormat.head(key.name, id: id) + EventStreamFormat.body(data()))
            }
            recentTagged.insert(entry, at: 0)
            return .whole(entry.whole!)
        }
        Self.remember((id, key, inputs, nil), in: &recentTagged)
        return .parts(head: SharedBytes(EventStreamFormat.head(key.name, id: id)), body: taggedBody(key, answering: inputs, data: data))
    }

    /// The data of a multiplexed stream's event and the blank line that ends it.
    private func taggedBody(_ key: EventKey, answering inputs: [String: String], data: () -> [UInt8]) -> SharedBytes {
        if let index = recentBodies.firstIndex(where: { $0.key == key && $0.inputs == inputs }) {
            let entry = recentBodies.remove(at: index)
            recentBodies.insert(entry, at: 0)
            return entry.body
        }
        let body = SharedBytes(EventStreamFormat.body(data()))
        Self.remember((key, inputs, body), in: &recentBodies)
        return body
    }

    /// `{"resource":"<name>","inputs":{…},"<member>":<value>}`, without `inputs` when there are none.
    private static func tagged(_ resource: String, answering inputs: [String: String], member: String, value: [UInt8]) -> [UInt8] {
        var tagged = Array(#"{"resource":"#.utf8)
        JSONWriter.appendString(resource, to: &tagged)
        tagged.append(UInt8(ascii: ","))
        if !inputs.isEmpty { tagged += Array(#""inputs":"#.utf8) + EventStreamFraming.inputsObject(inputs).serialized + [UInt8(ascii: ",")] }
        JSONWriter.appendString(member, to: &tagged)
        tagged.append(UInt8(ascii: ":"))
        return tagged + value + [UInt8(ascii: "}")]
    }

    // MARK: - Patches

    /// The JSON Patch from `base` to `snapshot`, as text; nil when it is not smaller than
    /// `snapshot`'s document (or a document cannot be read, which a snapshot's never fails).
    private func patch(from base: Snapshot, to snapshot: Snapshot, of resource: String, diff: JSONDiff) -> [UInt8]? {
        let key = EventKey(resource: resource, version: snapshot.version, from: base.version)
        if let index = recentPatches.firstIndex(where: { $0.key == key }) {
            let entry = recentPatches.remove(at: index)
            recentPatches.insert(entry, at: 0)
            return entry.patch
        }
        var patch: [UInt8]?
        if let old = document(base), let new = document(snapshot) {
            let text = JSONPatch.serialized(diff.patch(from: old, to: new))
            if text.count < snapshot.json.count { patch = text }
        }
        Self.remember((key, patch), in: &recentPatches)
        return patch
    }

    /// `snapshot`'s document, parsed with its objects kept as their text: equal items of
    /// two versions then compare as bytes, and only a changed item's members are read.
    private func document(_ snapshot: Snapshot) -> JSON? {
        if let entry = recentDocuments.first(where: { $0.version == snapshot.version }) { return entry.document }
        guard let document = try? JSON(parsing: snapshot.json, keeping: .objects) else { return nil }
        Self.remember((snapshot.version, document), in: &recentDocuments)
        return document
    }

    /// Puts `entry` first in `entries`, forgetting the oldest beyond ``capacity``.
    private static func remember<Entry>(_ entry: Entry, in entries: inout [Entry]) {
        entries.insert(entry, at: 0)
        if entries.count > capacity { entries.removeLast() }
    }
}
