/// The `id:` of a multiplexed stream's snapshots (`GET /events`): the version of every
/// resource's document the client has, in request order, `groups:<version>,rows:<version>`.
/// A resource the client has no document of yet is left out. Sent back as `Last-Event-ID`, it
/// tells a reconnecting stream which documents not to send again.
///
/// ```swift
/// CompositeEventID.format([("groups", "0a1b…"), ("rows", "77c0…")])   // "groups:0a1b…,rows:77c0…"
/// CompositeEventID.versions(in: "groups:0a1b…,rows:77c0…")            // ["groups": "0a1b…", "rows": "77c0…"]
/// ```
enum CompositeEventID {
    static func format(_ versions: [(resource: String, version: String)]) -> String {
        var id = ""
        id.reserveCapacity(versions.reduce(0) { $0 + $1.resource.utf8.count + $1.version.utf8.count + 2 })
        for (index, entry) in versions.enumerated() {
            if index > 0 { id += "," }
            id += entry.resource
            id += ":"
            id += entry.version
        }
        return id
    }

    /// The version of each resource named in `text`. What does not have the shape of an entry
    /// is ignored rather than refused: the id is the client's echo of what it was sent (or an
    /// id of another stream, e.g. a single resource's bare version), and the worst an odd one
    /// can do is make the stream send a document the client already has.
    static func versions(in text: String) -> [String: String] {
        var versions: [String: String] = [:]
        for entry in text.split(separator: ",") {
            // A version is hex digits: the last colon ends the resource's name.
            guard let colon = entry.lastIndex(of: ":"), colon > entry.startIndex, entry.index(after: colon) < entry.endIndex
            else { continue }
            versions[String(entry[..<colon])] = String(entry[entry.index(after: colon)...])
        }
        return versions
    }
}
