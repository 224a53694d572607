import HTTPCore

/// `details.batch` of a list resource: the upstream's batch form of its detail endpoint, one
/// call for the details of many items (`GET /groups/metadata?ids=a,b,c`), as most APIs have
/// one, instead of a call per item. A list of N items then costs ⌈N/``max``⌉ detail calls.
///
/// The answer's items (at ``itemsAt``) are matched back to the list's items by their id
/// (``idMember``), in whatever order they come; each is that item's details, merged into it as
/// a detail answer's object is (the list's members win). An item the answer leaves out fails
/// (`upstream_item_missing`, under `onItemFailure`); a batch call that fails fails its items.
///
/// ```swift
/// let batch = DetailBatch(path: "/groups/metadata", parameter: "ids", style: .comma, max: 50, itemsAt: JSONPath("result"), idMember: "id")
/// ```
public struct DetailBatch: Sendable, Equatable {
    /// How the ids go into the query.
    public enum Style: String, Sendable, CaseIterable {
        /// One parameter, its ids separated by raw commas: `?ids=a,b,c`.
        case comma
        /// The parameter once per id: `?ids=a&ids=b&ids=c`.
        case `repeat`
    }

    /// The batch call without its ids, e.g. `/groups/metadata` or
    /// `/teams/{team}/groups/metadata?status={status}`: the resource's parameters, no `{id}`.
    public var path: UpstreamPath
    /// The query parameter that carries the ids, e.g. `ids`.
    public var parameter: String
    public var style: Style
    /// The most ids one call asks for.
    public var max: Int
    /// Where the array of items is in the answer, e.g. `result`.
    public var itemsAt: JSONPath
    /// The member of each answered item that is its id, e.g. `id`.
    public var idMember: String

    public init(path: UpstreamPath, parameter: String, style: Style, max: Int, itemsAt: JSONPath, idMember: String) {
        self.path = path
        self.parameter = parameter
        self.style = style
        self.max = max
        self.itemsAt = itemsAt
        self.idMember = idMember
    }
}

/// A ``DetailBatch``'s call for the parameter values of one request, ready for its ids:
/// `/groups/metadata?ids=` and then the ids, each percent-encoded as a query value
/// (``QueryString/percentEncoded(_:)``: a comma inside an id is `%2C`, so only the separators
/// are raw commas).
///
/// ```swift
/// let call = BatchCallPath(batch, parameters: .none)
/// call.path(for: ["a", "b c"])     // "/groups/metadata?ids=a,b%20c"
/// ```
struct BatchCallPath: Sendable, Equatable {
    /// The call up to its first id: `/groups/metadata?ids=`, `/x?status=open&ids=`.
    let start: String
    /// What goes between two ids: `,`, or `&ids=` for ``DetailBatch/Style/repeat``.
    let separator: String

    init(_ batch: DetailBatch, parameters: ParameterValues) {
        let base = batch.path.rendered(with: parameters)
        let joiner = base.hasSuffix("?") || base.hasSuffix("&") ? "" : base.contains("?") ? "&" : "?"
        let name = QueryString.percentEncoded(batch.parameter)
        start = base + joiner + name + "="
        separator = batch.style == .comma ? "," : "&" + name + "="
    }

    /// The call for `ids` (none empty: an empty id has no place in a comma list), written in
    /// one allocation: a string per encoded id, joined, cost more than the rest of a call.
    func path(for ids: [String]) -> String {
        let start = start.utf8, separator = separator.utf8
        let room = ids.reduce(start.count + max(0, ids.count - 1) * separator.count) { $0 + 3 * $1.utf8.count }
        return String(unsafeUninitializedCapacity: room) { buffer in
            var written = UnsafeMutableBufferPointer(rebasing: buffer[...]).initialize(from: start).1
            for (index, id) in ids.enumerated() {
                if index > 0 { written += UnsafeMutableBufferPointer(rebasing: buffer[written...]).initialize(from: separator).1 }
                var id = id
                written += id.withUTF8 { QueryString.writePercentEncoded($0, into: UnsafeMutableBufferPointer(rebasing: buffer[written...])) }
            }
            return written
        }
    }

    /// The call for one id: what names that id's details (the detail cache's key).
    func path(for id: String) -> String {
        start + QueryString.percentEncoded(id)
    }

    /// The call with its ids left out, `/groups/metadata?ids=…`: for messages, which would
    /// otherwise repeat up to ``DetailBatch/max`` ids for each item they mark.
    var abbreviated: String { start + "…" }
}
