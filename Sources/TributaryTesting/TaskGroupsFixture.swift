import HTTPCore
import HTTPServer

/// The `tasks` upstream API of the contract as test data: groups in list order and their
/// metadata, with JSON for what the upstream answers and what `GET /groups` must answer.
///
/// ```swift
/// let groups = Observed(TaskGroupsFixture(count: 5))
/// let upstream = try await ScriptedUpstream.start { request in groups.value.reply(to: request) ?? .json("{}", status: 404) }
/// ```
public struct TaskGroupsFixture: Sendable {
    public struct Group: Sendable, Equatable {
        public var id: String
        public var name: String
        public var taskCount: Int
        public var lastUpdated: String

        public init(id: String, name: String, taskCount: Int, lastUpdated: String) {
            self.id = id
            self.name = name
            self.taskCount = taskCount
            self.lastUpdated = lastUpdated
        }
    }

    public var groups: [Group]

    /// `count` groups; the fourth has a name that exercises JSON escaping and UTF-8.
    public init(count: Int, idPrefix: String = "g") {
        groups = (0..<count).map { index in
            Group(id: "\(idPrefix)\(index)-\(index * 7919 % 1000)", name: index == 3 ? #"Grüße "quoted" \ back ✓"# : "Group \(index)",
                  taskCount: 7 * index + 3, lastUpdated: "2026-11-\(10 + index % 18)T10:00:00Z")
        }
    }

    public init(groups: [Group]) {
        self.groups = groups
    }

    /// `GET /groups` of the upstream.
    public var listJSON: String {
        #"{"result":["# + groups.map { #"{"id":"# + JSONWriter.string($0.id) + #","name":"# + JSONWriter.string($0.name) + "}" }
            .joined(separator: ",") + "]}"
    }

    /// `GET /groups/{id}/metadata` of the upstream.
    public func metadataJSON(for group: Group) -> String {
        #"{"result":{"taskCount":\#(group.taskCount),"lastUpdated":""# + group.lastUpdated + #""}}"#
    }

    /// What Tributary's `GET /groups` must answer: the list merged with metadata, in list order.
    public var mergedJSON: String {
        "[" + groups.map(mergedJSON(of:)).joined(separator: ",") + "]"
    }

    public func mergedJSON(of group: Group) -> String {
        #"{"id":"# + JSONWriter.string(group.id) + #","name":"# + JSONWriter.string(group.name)
            + #","taskCount":\#(group.taskCount),"lastUpdated":""# + group.lastUpdated + #""}"#
    }

    /// The group whose metadata `path` asks for (`/groups/<percent-encoded id>/metadata`).
    public func group(forMetadataPath path: String) -> Group? {
        let parts = path.split(separator: "/")
        guard parts.count == 3, parts[0] == "groups", parts[2] == "metadata",
              let id = QueryString.percentDecoded(String(parts[1])) else { return nil }
        return groups.first { $0.id == id }
    }

    /// The upstream's answer to `request`, or nil for paths it does not serve: the list, each
    /// group's metadata, and their batch form (``batchMetadataJSON(for:)``).
    public func reply(to request: RecordedRequest, delay: Duration = .zero) -> UpstreamReply? {
        if request.path == "/groups" { return .json(listJSON, delay: delay) }
        if let group = group(forMetadataPath: request.path) { return .json(metadataJSON(for: group), delay: delay) }
        if request.path == "/groups/metadata" { return .json(batchMetadataJSON(for: Self.batchIDs(of: request)), delay: delay) }
        return nil
    }

    /// `GET /groups/metadata?ids=…` of the upstream: `{"result":[{"id","taskCount","lastUpdated"}]}`
    /// for each id asked that names a group, in the reverse order of `ids` (a batch answer
    /// need not keep the order asked), unknown ids left out.
    public func batchMetadataJSON(for ids: [String]) -> String {
        let items = ids.reversed().compactMap { id in groups.first { $0.id == id } }.map { group in
            #"{"id":"# + JSONWriter.string(group.id) + #","taskCount":\#(group.taskCount),"lastUpdated":""# + group.lastUpdated + #""}"#
        }
        return #"{"result":["# + items.joined(separator: ",") + "]}"
    }

    /// The ids a batch call asks for, in order: every value of `parameter` (`?ids=a&ids=b`),
    /// each split at its raw commas (`?ids=a,b`), then percent-decoded.
    public static func batchIDs(of request: RecordedRequest, parameter: String = "ids") -> [String] {
        guard let query = request.uri.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        return query.split(separator: "&").flatMap { pair -> [String] in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == parameter else { return [] }
            return parts[1].split(separator: ",", omittingEmptySubsequences: false).map { QueryString.percentDecoded(String($0)) ?? String($0) }
        }
    }
}
