import AccessControl
import HTTPServer

/// What a `GET /events` request asks for: the resources its stream carries, in the order
/// asked, each with its own parameters, e.g.
/// `?resource=groups&resource=search&search.q=swift` → groups `[:]`, search `["q": "swift"]`.
///
/// Read whole before anything is subscribed, so a request it refuses leaves nothing behind:
/// no `resource` (400), more than ``maximumResources`` (400), one asked for twice (400), one
/// that does not exist (404 `unknown_resource`), a parameter without the `<resource>.` prefix
/// or for a resource the stream does not carry (400). `updates` is the stream's own, for
/// every resource (``EventUpdates``; 400 `invalid_parameter` for a value it does not know), and
/// so is `progressive` (``ProgressiveDocuments``);
/// `access_token` is the client's bearer token (``BearerToken``), no resource's.
struct EventsQuery {
    /// Resources on one stream at most: each is a subscription, and for views of their own
    /// (`rows`, `search`) a pipeline of its own, so one request must not open unboundedly many.
    static let maximumResources = 16

    struct Subscription {
        let resource: String
        /// The parameters named `<resource>.<name>`, by `<name>`; a repeated one's last value.
        var parameters: [String: String] = [:]
    }

    let subscriptions: [Subscription]
    /// Whether every resource's new documents go whole or as patches.
    let updates: EventUpdates
    /// Whether every resource's first document shows as it arrives (``ProgressiveDocuments``).
    let progressive: Bool

    /// Reads the query's `pairs`; `known` are the resources that exist.
    init(_ pairs: [(name: String, value: String)], known: Set<String>) throws(HTTPError) {
        let resources = pairs.filter { $0.name == "resource" }.map(\.value)
        let listed = known.sorted().joined(separator: ", ")
        guard !resources.isEmpty else {
            throw .badRequest("name at least one resource: /events?resource=<name>&resource=<name>… (known: \(listed))")
        }
        guard resources.count <= Self.maximumResources else {
            throw .badRequest("at most \(Self.maximumResources) resources on one stream, \(resources.count) asked for")
        }
        var subscriptions: [Subscription] = []
        for resource in resources {
            guard !subscriptions.contains(where: { $0.resource == resource }) else {
                throw .badRequest("resource \(resource) is asked for more than once")
            }
            guard known.contains(resource) else {
                throw HTTPError(status: 404, code: "unknown_resource", message: "no resource named \(resource) (known: \(listed))")
            }
            subscriptions.append(Subscription(resource: resource))
        }
        var updates: String?
        var progressive: String?
        // `access_token` is the bearer token (RFC 6750 §2.3), read by the access gate before this.
        for (name, value) in pairs where name != "resource" && name != BearerToken.queryName {
            if name == EventUpdates.parameter {
                updates = value
                continue
            }
            if name == ProgressiveDocuments.parameter {
                progressive = value
                continue
            }
            // The longest matching name wins, should a resource's name hold a dot itself.
            let owner = subscriptions.indices
                .filter { name.hasPrefix(subscriptions[$0].resource + ".") }
                .max { subscriptions[$0].resource.count < subscriptions[$1].resource.count }
            guard let owner else {
                guard let dot = name.firstIndex(of: ".") else {
                    throw .badRequest("parameter \(name) names no resource: a resource's parameters are <resource>.<name>, e.g. search.q")
                }
                let resource = name[..<dot]
                throw .badRequest("parameter \(name) is for resource \(resource), which this stream does not carry (add resource=\(resource))")
            }
            let parameter = String(name.dropFirst(subscriptions[owner].resource.count + 1))
            guard !parameter.isEmpty else { throw .badRequest("parameter \(name) has no name after the resource's") }
            subscriptions[owner].parameters[parameter] = value
        }
        self.subscriptions = subscriptions
        self.updates = try EventUpdates(parameter: updates)
        self.progressive = try ProgressiveDocuments.asked(progressive)
    }
}
