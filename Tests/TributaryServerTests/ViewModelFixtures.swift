import TributaryTesting

/// The `media` and `search` upstream APIs of the contract as scripted test data.
struct MediaFixture: Sendable {
    var topics: [String]
    var pages = 3
    var perPage = 2
    /// Topics whose medias answer 500.
    var failing: Set<String> = []
    /// Topics whose pages after the first never answer.
    var hangingNextPages: Set<String> = []
    /// Topics whose first page never answers.
    var hangingFirstPages: Set<String> = []

    var topicsJSON: String {
        #"{"result":["# + topics.map { #"{"id":"\#($0)","title":"Topic \#($0)"}"# }.joined(separator: ",") + "]}"
    }

    func mediaJSON(_ topic: String, _ number: Int) -> String { #"{"id":"\#(topic)-\#(number)","title":"\#(topic) #\#(number)"}"# }

    func pageJSON(_ topic: String, _ page: Int) -> String {
        let medias = (1...perPage).map { mediaJSON(topic, (page - 1) * perPage + $0) }.joined(separator: ",")
        return #"{"result":[\#(medias)],"next":\#(page < pages ? "\"\(page + 1)\"" : "null")}"#
    }

    /// What `GET /rows` shows for `topic` with `loaded` pages.
    func rowJSON(_ topic: String, loaded: Int) -> String {
        let medias = (0..<(loaded * perPage)).map { mediaJSON(topic, $0 + 1) }.joined(separator: ",")
        return #"{"topic":{"id":"\#(topic)","title":"Topic \#(topic)"},"medias":[\#(medias)]}"#
    }

    func rowsJSON(loaded: [String: Int] = [:]) -> String {
        "[" + topics.filter { !failing.contains($0) }.map { rowJSON($0, loaded: loaded[$0] ?? 1) }.joined(separator: ",") + "]"
    }

    func reply(to request: RecordedRequest) -> UpstreamReply? {
        if request.path == "/topics" { return .json(topicsJSON) }
        let parts = request.path.split(separator: "/")
        guard parts.count == 3, parts[0] == "topics", parts[2] == "medias" else { return nil }
        let topic = String(parts[1])
        guard topics.contains(topic) else { return .json("{}", status: 404) }
        if failing.contains(topic) { return .json(#"{"error":"down"}"#, status: 500) }
        let page = request.query["page"].flatMap(Int.init) ?? 1
        if page > 1 && hangingNextPages.contains(topic) { return .hang }
        if page == 1 && hangingFirstPages.contains(topic) { return .hang }
        return .json(pageJSON(topic, page))
    }
}

/// A search upstream over a few repository names; searches for `slow…` never answer.
enum SearchFixture {
    static let names = ["swift-nio", "swift-log", "vapor", "hummingbird", "swift-metrics", "nginx"]

    static func itemsJSON(for query: String) -> String {
        let hits = names.enumerated().filter { $0.element.contains(query) }
        return "[" + hits.map { index, name in
            #"{"id":\#(index + 1),"name":"\#(name)","fullName":"org/\#(name)","description":null,"stargazersCount":\#(100 - index)}"#
        }.joined(separator: ",") + "]"
    }

    static func reply(to request: RecordedRequest) -> UpstreamReply? {
        guard request.path == "/search/repositories", let query = request.query["q"] else { return nil }
        if query.hasPrefix("slow") { return .hang }
        return .json(#"{"total_count":1,"items":\#(itemsJSON(for: query))}"#)
    }
}

extension ServiceHarness {
    /// The default rows and search resources against `upstream`.
    static func viewModelsYAML(upstream: String, debounce: String = "150ms") -> String {
        """
        upstreams:
          tasks: {url: "\(upstream)"}
          media: {url: "\(upstream)", timeout: 60s, retries: 0}
          search: {url: "\(upstream)", timeout: 60s, retries: 0}
        resources:
        \(viewModelResourcesYAML(debounce: debounce))
        """
    }

    /// The `rows` and `search` resources (on upstreams `media` and `search`), as entries of a
    /// configuration's `resources:` map.
    static func viewModelResourcesYAML(debounce: String = "150ms") -> String {
        """
          rows:
            kind: pages
            upstream: media
            list: {path: /topics, items: result, id: id}
            pages: {path: "/topics/{id}/medias", items: result, cursor: next, parameter: page}
            row: {item: topic, pages: medias}
          search:
            kind: search
            upstream: search
            path: /search/repositories
            parameter: q
            items: items
            minimumLength: 3
            debounce: \(debounce)
        """
    }
}

extension SSEClient {
    /// The id the stream announced in its first event.
    func announcedID() async throws -> String {
        let event = try await next(type: "stream")
        guard let range = event.data.firstRange(of: #""id":""#) else { throw TestClientError.malformed(event.data) }
        return String(event.data[range.upperBound...].prefix(32))
    }
}
