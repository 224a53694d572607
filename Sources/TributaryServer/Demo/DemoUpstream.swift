public import EventLoop
import HTTPServer
import Aggregation
import Glibc
import HTTPCore
public import TributaryConfiguration

/// The built-in demo upstream: one HTTP server serving all three upstream APIs of the
/// default configuration (`tasks`, `media`, `search`) with data that changes over time, so
/// `tributary demo` shows live updates with nothing else to start.
///
/// | path | answer |
/// |---|---|
/// | `GET /groups` | `{"result":[{"id","name"}]}` |
/// | `GET /groups/{id}/metadata` | `{"result":{"taskCount","lastUpdated"}}` (changes every few seconds) |
/// | `GET /groups/metadata?ids=a,b` (or `?ids=a&ids=b`) | `{"result":[{"id","taskCount","lastUpdated"}]}`, the batch form (unknown ids left out) |
/// | `GET /topics` | `{"result":[{"id","title"}]}` |
/// | `GET /topics/{id}/medias?page=N` | `{"result":[{"id","title"}],"next":"N+1"\|null}` |
/// | `GET /search/repositories?q=…` | `{"items":[{"id","name","fullName","description","stargazersCount"}]}` |
/// | `GET /teams/{team}/groups?status=open\|done` | a team's groups of that status (any team) |
/// | `GET /teams/{team}/groups/{id}/metadata` | as the groups' metadata |
/// | `GET /me/groups` | the groups of the user `Authorization: Bearer <name>` names (`guest` without one) |
/// | `GET /me/groups/{id}/metadata` | that user's group's metadata |
///
/// With a `slowDetail` (`tributary demo --slow-detail 2s`), the details of one group (the
/// third, ``slowGroupIndex``), alone or in a batch, answer that much later: a page opened with
/// `progressive=true` shows the list at once and that group filling in.
public final class DemoUpstream {
    private let server: HTTPServer
    private var router = Router<(ServerRequest) -> Void>()
    /// The answers `slowDetail` holds back; cancelled with the demo, so none outlives it.
    private let delayed: DelayedAnswers

    /// The group whose details a `slowDetail` delays.
    public static let slowGroupIndex = 2

    public init(loop: EventLoop, slowDetail: Duration = .zero) throws {
        server = try HTTPServer(loop: loop) { _ in }
        let slowID = DemoData.id(for: DemoData.groupNames[Self.slowGroupIndex])
        let delayed = DelayedAnswers(loop: loop)
        self.delayed = delayed
        /// Runs `answer` now, or after `slowDetail` when `slow`.
        let answering = { (slow: Bool, answer: @escaping () -> Void) in
            guard slow, slowDetail > .zero else { return answer() }
            delayed.answer(after: slowDetail, answer)
        }
        router.add(.get, "/groups") { $0.respond(json: DemoData.groups) }
        router.add(.get, "/groups/{id}/metadata") { request in
            guard let index = DemoData.groupNames.firstIndex(where: { DemoData.id(for: $0) == request.parameters["id"] }) else {
                return request.respond(.notFound("no group \(request.parameters["id"] ?? "")"))
            }
            answering(index == Self.slowGroupIndex) { request.respond(json: DemoData.metadata(groupIndex: index, now: Int64(time(nil)))) }
        }
        router.add(.get, "/groups/metadata") { request in
            let ids = Self.batchIDs(in: request.uri)
            guard !ids.isEmpty else { return request.respond(.badRequest("name the groups: ?ids=a,b,c or ?ids=a&ids=b")) }
            answering(ids.contains(slowID)) { request.respond(json: DemoData.batchMetadata(ids: ids, now: Int64(time(nil)))) }
        }
        router.add(.get, "/topics") { $0.respond(json: DemoData.topics) }
        router.add(.get, "/topics/{id}/medias") { request in
            guard let index = DemoData.topicTitles.firstIndex(where: { DemoData.slug($0) == request.parameters["id"] }) else {
                return request.respond(.notFound("no topic \(request.parameters["id"] ?? "")"))
            }
            let page = request.queryParameters["page"].flatMap(Int.init) ?? 1
            guard (1...DemoData.pagesPerTopic).contains(page) else { return request.respond(.badRequest("no page \(page)")) }
            request.respond(json: DemoData.medias(topicIndex: index, page: page))
        }
        router.add(.get, "/search/repositories") { request in
            request.respond(json: DemoData.search(request.queryParameters["q"] ?? ""))
        }
        router.add(.get, "/teams/{team}/groups") { request in
            let team = request.parameters["team"] ?? ""
            request.respond(json: DemoData.teamGroups(team: team, status: request.queryParameters["status"] ?? "open"))
        }
        router.add(.get, "/teams/{team}/groups/{id}/metadata") { request in
            guard let metadata = DemoData.teamMetadata(
                team: request.parameters["team"] ?? "", groupID: request.parameters["id"] ?? "", now: Int64(time(nil))) else {
                return request.respond(.notFound("no such group of team \(request.parameters["team"] ?? "")"))
            }
            request.respond(json: metadata)
        }
        router.add(.get, "/me/groups") { request in
            request.respond(json: DemoData.userGroups(DemoData.user(authorization: request.header("Authorization"))))
        }
        router.add(.get, "/me/groups/{id}/metadata") { request in
            let user = DemoData.user(authorization: request.header("Authorization"))
            guard let metadata = DemoData.userMetadata(user, groupID: request.parameters["id"] ?? "", now: Int64(time(nil))) else {
                return request.respond(.notFound("no such group of this user"))
            }
            request.respond(json: metadata)
        }
        server.handler = { [unowned self] request in
            guard case .found(let handle, let parameters) = router.match(request.method, path: request.path) else {
                return request.respond(.notFound("the demo upstream has nothing at \(request.path)"))
            }
            request.parameters = parameters
            handle(request)
        }
    }

    /// The ids of a batch call's target: every `ids` value, split at its raw commas, each then
    /// percent-decoded (a comma inside an id comes as `%2C`).
    static func batchIDs(in target: String) -> [String] {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        return query.split(separator: "&").flatMap { pair -> [String] in
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == "ids" else { return [] }
            return parts[1].split(separator: ",").compactMap { QueryString.percentDecoded(String($0)) }
        }
    }

    deinit {
        delayed.cancelAll()
    }

    /// A `--slow-detail` value (`2s`, `1500ms`), as configuration durations are written.
    public static func delay(_ text: String) -> Duration? {
        ConfigDuration.parse(text)
    }

    /// Listens on `address`; returns the bound port.
    @discardableResult
    public func bind(_ address: ListenAddress) throws -> UInt16 {
        try server.bind(host: address.host, port: address.port)
    }
}

/// Answers held back, each by a timer of its own, until it fires or the demo goes.
/// Loop-confined.
private final class DelayedAnswers {
    private let loop: EventLoop
    private var timers: [ObjectIdentifier: LoopTimer] = [:]

    init(loop: EventLoop) {
        self.loop = loop
    }

    func answer(after delay: Duration, _ answer: @escaping () -> Void) {
        var key: ObjectIdentifier?
        let timer = LoopTimer(loop: loop) { [weak self] in
            if let key { self?.timers[key] = nil }
            answer()
        }
        key = ObjectIdentifier(timer)
        timers[ObjectIdentifier(timer)] = timer
        timer.schedule(after: delay)
    }

    /// Nothing held back is answered any more: each timer, and the request it holds, goes.
    func cancelAll() {
        for timer in timers.values { timer.cancel() }
        timers = [:]
    }
}

extension ServerRequest {
    func respond(json document: JSON) {
        respond(status: 200, headers: [("Content-Type", "application/json")], body: document.serialized)
    }
}
