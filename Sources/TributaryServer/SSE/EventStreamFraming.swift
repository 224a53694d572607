import Aggregation
import HTTPServer

/// How an ``EventStream`` labels its events: a resource's own stream (`GET /groups`) shows that
/// resource as it is; a multiplexed one (`GET /events`) carries several and tags every event
/// with its resource, and, for a view with inputs, the input values the event answers (a page
/// that changed `q` tells the results for its new query from late ones for the old).
///
/// | event | `single` | `multiplexed` |
/// |---|---|---|
/// | `stream` data | `{"id","triggers","inputs"}` | `{"id","resource","triggers","inputs"}`, one per resource |
/// | `snapshot` id | `<version>` | ``CompositeEventID``: `groups:<version>,rows:<version>` |
/// | `snapshot` data | the document | `{"resource":"groups","data":<the document>}`; `{"resource":"search","inputs":{"q":"swift"},"data":…}` |
/// | `error` data | `{"error":{"code","message"}}` | `{"resource":"groups","error":{"code","message"}}`, with `inputs` as above |
enum EventStreamFraming {
    case single
    case multiplexed

    /// Whether events name the input values they answer.
    var namesInputs: Bool { self == .multiplexed }

    /// `{"q":"swift"}`: input values as a JSON object, in name order.
    static func inputsObject(_ inputs: [String: String]) -> JSON {
        .object(inputs.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
    }

    /// The data of the `stream` event that announces `feed`: its id and what its client may poke.
    func announcement(of feed: EventFeed) -> [UInt8] {
        var members: [(key: String, value: JSON)] = [("id", .string(feed.id.description))]
        if self == .multiplexed { members.append(("resource", .string(feed.resource))) }
        members.append(("triggers", .array(feed.view.triggers.map(JSON.string))))
        members.append(("inputs", .array(feed.view.inputs.map(JSON.string))))
        return JSON.object(members).serialized
    }

    /// The data of an `error` event: `error` failed a refresh of `resource` for `inputs`.
    func errorData(_ error: HTTPError, of resource: String, answering inputs: [String: String]) -> [UInt8] {
        switch self {
        case .single:
            return Array(error.json.utf8)
        case .multiplexed:
            var members: [(key: String, value: JSON)] = [("resource", .string(resource))]
            if !inputs.isEmpty { members.append(("inputs", Self.inputsObject(inputs))) }
            members.append(("error", .object([("code", .string(error.code)), ("message", .string(error.message))])))
            return JSON.object(members).serialized
        }
    }

    /// The version of each of `resources` the reconnecting client already has, from the id
    /// of the last event it got: a single stream's is its resource's version.
    func versionsTheClientHas(lastEventID: String?, resources: [String]) -> [String: String] {
        guard let lastEventID else { return [:] }
        switch self {
        case .single:
            return resources.first.map { [$0: lastEventID] } ?? [:]
        case .multiplexed:
            return CompositeEventID.versions(in: lastEventID)
        }
    }
}
