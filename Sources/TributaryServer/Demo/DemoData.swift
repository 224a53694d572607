import Aggregation

/// The data of the built-in demo upstream: task groups whose counts change every few
/// seconds, topics with paginated medias, and a small corpus of repositories to search.
/// Everything is a pure function of the clock, so every request sees a consistent world.
enum DemoData {
    static let groupNames = ["Inbox", "Today", "Groceries", "Work", "Reading list", "Garden", "Travel", "Someday"]

    /// A stable UUID-shaped id for a name.
    static func id(for name: String) -> String {
        let snapshot = Snapshot(json: Array(name.utf8)).version + Snapshot(json: Array(("id:" + name).utf8)).version
        let hex = Array(snapshot)
        return [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
    }

    static var groups: JSON {
        .object([("result", .array(groupNames.map { name in .object([("id", .string(id(for: name))), ("name", .string(name))]) }))])
    }

    /// Group `index` changes every `3 + index` seconds.
    static func metadata(groupIndex index: Int, now: Int64) -> JSON {
        let period = Int64(3 + index)
        let changedAt = now / period * period
        let count = 3 + Int((changedAt / period) % 17) + index * 2
        return .object([("result", .object([
            ("taskCount", .integer(count)),
            ("lastUpdated", .string(iso8601(secondsSince1970: changedAt))),
        ]))])
    }

    // MARK: - Teams: a list that depends on the client's parameters

    /// A team's groups of one status (`open` or `done`), for any team name: the team's own
    /// names, different for each team and status, so a client sees its parameters reach the
    /// upstream.
    static func teamGroups(team: String, status: String) -> JSON {
        .object([("result", .array(teamGroupNames(team: team, status: status).map { name in
            .object([("id", .string(id(for: "\(team)/\(name)"))), ("name", .string(name))])
        }))])
    }

    static func teamGroupNames(team: String, status: String) -> [String] {
        let offset = hash(team) + (status == "done" ? 4 : 0)
        return (0..<3).map { groupNames[(offset + $0) % groupNames.count] + " (\(team), \(status))" }
    }

    /// The metadata of a team's group, as ``metadata(groupIndex:now:)``: changing over time.
    static func teamMetadata(team: String, groupID: String, now: Int64) -> JSON? {
        for status in ["open", "done"] {
            if let index = teamGroupNames(team: team, status: status).firstIndex(where: { id(for: "\(team)/\($0)") == groupID }) {
                return metadata(groupIndex: index + hash(team) % 5, now: now)
            }
        }
        return nil
    }

    // MARK: - A user's own groups: a list that depends on the client's `Authorization`

    /// The user a request's `Authorization: Bearer <name>` names (the demo trusts it: it shows
    /// forwarding, not authentication); `guest` without one.
    static func user(authorization: String?) -> String {
        guard let authorization, authorization.hasPrefix("Bearer "), authorization.count > 7 else { return "guest" }
        return String(authorization.dropFirst(7).prefix(40))
    }

    /// A small stable number from `text`.
    static func hash(_ text: String) -> Int {
        text.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF }
    }

    /// `user`'s own groups: names of their own, so two users see two documents.
    static func userGroups(_ user: String) -> JSON {
        .object([("result", .array(userGroupNames(user).map { name in
            .object([("id", .string(id(for: "\(user)/\(name)"))), ("name", .string(name))])
        }))])
    }

    static func userGroupNames(_ user: String) -> [String] {
        let offset = hash(user)
        return (0..<3).map { "\(user)'s " + groupNames[(offset + $0) % groupNames.count].lowercased() }
    }

    static func userMetadata(_ user: String, groupID: String, now: Int64) -> JSON? {
        guard let index = userGroupNames(user).firstIndex(where: { id(for: "\(user)/\($0)") == groupID }) else { return nil }
        return metadata(groupIndex: index, now: now)
    }

    /// The batch form of ``metadata(groupIndex:now:)``: each id that names a group, with its
    /// id, in the order asked.
    static func batchMetadata(ids: [String], now: Int64) -> JSON {
        .object([("result", .array(ids.compactMap { id in
            guard let index = groupNames.firstIndex(where: { self.id(for: $0) == id }),
                  let details = metadata(groupIndex: index, now: now)["result"]?.objectValue else { return nil }
            return .object([("id", .string(id))] + details)
        }))])
    }

    static let topicTitles = ["Trending now", "New releases", "Documentaries", "Comedy", "For the kids"]
    static let pagesPerTopic = 3
    static let mediasPerPage = 4

    static var topics: JSON {
        .object([("result", .array(topicTitles.map { title in .object([("id", .string(slug(title))), ("title", .string(title))]) }))])
    }

    /// Page `page` (1-based) of a topic's medias, with the cursor of the next page.
    static func medias(topicIndex: Int, page: Int) -> JSON {
        let title = topicTitles[topicIndex]
        let items: [JSON] = (0..<mediasPerPage).map { offset in
            let number = (page - 1) * mediasPerPage + offset + 1
            return .object([("id", .string("\(slug(title))-\(number)")), ("title", .string("\(title) #\(number)"))])
        }
        let next: JSON = page < pagesPerTopic ? .string(String(page + 1)) : .null
        return .object([("result", .array(items)), ("next", next)])
    }

    static let repositories: [(name: String, owner: String, description: String?, stars: Int)] = [
        ("swift-nio", "apple", "Event-driven network application framework for high performance protocol servers & clients", 8000),
        ("swift-log", "apple", "A Logging API for Swift", 3600),
        ("swift-metrics", "apple", "Metrics API for Swift", 1300),
        ("swift-argument-parser", "apple", "Straightforward, type-safe argument parsing for Swift", 3400),
        ("swift-collections", "apple", "Commonly used data structures for Swift", 3900),
        ("swift-configuration", "apple", "API for reading configuration in Swift", 400),
        ("hummingbird", "hummingbird-project", "Lightweight, flexible HTTP server framework written in Swift", 1300),
        ("vapor", "vapor", "A server-side Swift HTTP web framework", 25000),
        ("libevent", "libevent", "Event notification library", 11000),
        ("OpenCombine", "OpenCombine", "Open source implementation of Apple's Combine framework", 2700),
        ("async-http-client", "swift-server", "HTTP client library built on SwiftNIO", 1000),
        ("swift-prometheus", "swift-server", "Prometheus client library for Swift", 150),
        ("Yams", "jpsim", "A Sweet and Swifty YAML parser", 1100),
        ("nginx", "nginx", "The official NGINX open source repository", 24000),
        ("curl", "curl", "A command line tool and library for transferring data with URL syntax", 36000),
        ("swift-combine-extensions", "demo", nil, 12),
    ]

    /// Repositories whose name or description contains `query` (case-insensitive), most stars first.
    static func search(_ query: String) -> JSON {
        let needle = query.lowercased()
        let hits = repositories.enumerated().filter { _, repository in
            repository.name.lowercased().contains(needle) || (repository.description?.lowercased().contains(needle) ?? false)
        }.sorted { $0.element.stars > $1.element.stars }
        return .object([("items", .array(hits.map { index, repository in
            .object([
                ("id", .integer(index + 1)),
                ("name", .string(repository.name)),
                ("fullName", .string("\(repository.owner)/\(repository.name)")),
                ("description", repository.description.map(JSON.string) ?? .null),
                ("stargazersCount", .integer(repository.stars)),
            ])
        }))])
    }

    static func slug(_ title: String) -> String {
        String(title.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "-" })
    }

    /// `2026-11-20T10:00:00Z` for a count of seconds since 1970 (proleptic Gregorian, UTC).
    static func iso8601(secondsSince1970 seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}
