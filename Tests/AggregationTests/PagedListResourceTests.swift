import Aggregation
import EventLoop
import HTTPCore
import OpenCombine
import Rivers
import Testing
import TributaryTesting
import UpstreamClient

@Suite("Paged list resource: a list, each item with its sub-list loaded page by page")
struct PagedListResourceTests {
    static func definition(concurrency: Int = 8) -> PagedListResource.Definition {
        PagedListResource.Definition(
            listPath: "/topics", itemsAt: JSONPath("result"), idMember: "id", pagePath: "/topics/{id}/medias",
            pageItemsAt: JSONPath("result"), cursorAt: JSONPath("next"), cursorParameter: "cursor",
            rowItemKey: "topic", rowPagesKey: "medias", concurrency: concurrency)
    }

    /// The `media` upstream of these tests: `GET /topics` lists `topics`; `GET /topics/<t>/medias`
    /// is `t`'s first page and `?cursor=c<n>` its page n, each of two medias (`a1`, `a2`, then
    /// `a3`, `a4`…), the last of `pages` naming no next page (`"next":null`).
    struct MediaUpstream: Sendable {
        var topics: [String]
        var pages = 3

        var listJSON: String {
            #"{"result":["# + topics.map { #"{"id":"\#($0)"}"# }.joined(separator: ",") + "]}"
        }

        func reply(to request: RecordedRequest) -> UpstreamReply {
            if request.path == "/topics" { return .json(listJSON) }
            guard let page = Self.page(askedBy: request), topics.contains(page.topic), page.number <= pages else {
                return .json("{}", status: 404)
            }
            let medias = [2 * page.number - 1, 2 * page.number].map { #""\#(page.topic)\#($0)""# }.joined(separator: ",")
            return .json(#"{"result":[\#(medias)],"next":\#(page.number < pages ? #""c\#(page.number + 1)""# : "null")}"#)
        }

        /// The topic and page number a page call asks for.
        static func page(askedBy request: RecordedRequest) -> (topic: String, number: Int)? {
            let parts = request.path.split(separator: "/")
            guard parts.count == 3, parts[0] == "topics", parts[2] == "medias" else { return nil }
            guard let cursor = request.query["cursor"] else { return (String(parts[1]), 1) }
            guard cursor.hasPrefix("c"), let number = Int(cursor.dropFirst()) else { return nil }
            return (String(parts[1]), number)
        }

        /// A row as the resource writes it: the topic, and the medias of its first `loaded` pages.
        static func row(_ topic: String, loaded: Int) -> String {
            let medias = (0..<(2 * loaded)).map { #""\#(topic)\#($0 + 1)""# }.joined(separator: ",")
            return #"{"topic":{"id":"\#(topic)"},"medias":[\#(medias)]}"#
        }

        static func rows(_ rows: String...) -> String { "[" + rows.joined(separator: ",") + "]" }
    }

    /// The page calls `upstream` received for `topic`, as sent.
    static func pageCalls(_ topic: String, _ upstream: ScriptedUpstream) -> [String] {
        upstream.requests.filter { $0.path == "/topics/\(topic)/medias" }.map(\.uri)
    }

    /// A `media` resource's publishers on a loop thread of their own, and what they published.
    final class Harness: Sendable {
        enum Ending: Sendable, Equatable { case finished, failed(ResourceError) }
        enum Answer { case firstPages, rows }

        let thread: LoopThread
        let client: LoopBound<UpstreamClient>
        let trigger: LoopBound<Trigger>
        /// Every document published, as JSON text, in order, and how the publisher ended.
        let documents = Observed<[String]>([])
        let ending = Observed<Ending?>(nil)
        /// What the rows told `knownIDs` and `pageLoaded`, in order.
        let knownIDs = Observed<[Set<String>]>([])
        let pagesLoaded = Observed<[String]>([])

        /// `connections`: the pool's capacity for the upstream. With one, calls reach the
        /// upstream one at a time in the order they were made: a call that a test expects not
        /// to be made would have arrived before the call made after it.
        init(connections: Int = 64) async throws {
            thread = try LoopThread()
            let made = try await thread.run { loop in
                let client = UpstreamClient(loop: loop, configuration: .init(defaultPoolCapacity: connections))
                return (LoopBound(client, loop: loop), LoopBound(Trigger(), loop: loop))
            }
            client = made.0
            trigger = made.1
        }

        /// Subscribes to `answer` of a resource over `url`; what it publishes lands in
        /// `documents` and `ending`.
        func start(
            _ answer: Answer, _ definition: PagedListResource.Definition = PagedListResourceTests.definition(), upstream url: String,
            policy: Upstream.Policy = .init(timeout: .seconds(2), retries: 0)
        ) async throws -> LoopBound<AnyCancellable> {
            let base = try BaseURL(url)
            return try await thread.run { [self] loop in
                let upstream = Upstream(name: "media", base: base, policy: policy, client: client.value)
                let resource = PagedListResource(name: "rows", upstream: upstream, definition: definition)
                let publisher = switch answer {
                case .firstPages: resource.firstPages(trace: TraceContext())
                case .rows:
                    resource.rows(
                        loadingMoreOn: trigger.value, trace: TraceContext(),
                        knownIDs: { ids in self.knownIDs.update { $0.append(ids) } },
                        pageLoaded: { id in self.pagesLoaded.update { $0.append(id) } })
                }
                let cancellable = publisher.sink(
                    receiveCompletion: { completion in
                        switch completion {
                        case .finished: self.ending.update { $0 = .finished }
                        case .failure(let error): self.ending.update { $0 = .failed(error) }
                        }
                    },
                    receiveValue: { document in self.documents.update { $0.append(String(decoding: document.serialized, as: UTF8.self)) } })
                return LoopBound(cancellable, loop: loop)
            }
        }

        /// The JSON answer: its one document, or its failure.
        func firstPages(
            _ definition: PagedListResource.Definition = PagedListResourceTests.definition(), upstream url: String
        ) async throws -> Result<String, ResourceError>? {
            let subscription = try await start(.firstPages, definition, upstream: url)
            _ = await ending.wait(timeout: .seconds(10)) { $0 != nil }
            try await thread.run { _ in subscription.release() }
            return switch ending.value {
            case .finished?: documents.value.count == 1 ? .success(documents.value[0]) : nil
            case .failed(let error)?: .failure(error)
            case nil: nil
            }
        }

        /// Activates `loadMore` for each of `ids`, in order, in one turn of the loop.
        func loadMore(_ ids: String...) async throws {
            try await thread.run { [trigger] _ in
                for id in ids { trigger.value.activate(for: PagedListResource.LoadMore(id: id)) }
            }
        }

        /// Waits until the last document published is `expected`.
        func published(_ expected: String) async -> Bool {
            await documents.wait(timeout: .seconds(10)) { $0.last == expected }
        }

        func cancel(_ subscription: LoopBound<AnyCancellable>) async throws {
            try await thread.run { _ in
                subscription.value.cancel()
                subscription.release()
            }
        }

        func stop() async {
            await thread.stop { [client, trigger] in
                client.release()
                trigger.release()
            }
        }
    }

    // MARK: - The JSON answer: every row with its first page

    @Test("the JSON answer is every row with its first page, in list order whatever order the pages answer in")
    func firstPagesInListOrder() async throws {
        let media = MediaUpstream(topics: ["a", "b", "c", "d", "e", "f"])
        let upstream = try await ScriptedUpstream.start { request in
            var reply = media.reply(to: request)
            if let page = MediaUpstream.page(askedBy: request), let index = media.topics.firstIndex(of: page.topic) {
                reply.delay = .milliseconds(20 * (media.topics.count - index))
            }
            return reply
        }
        let harness = try await Harness()
        let answer = try await harness.firstPages(upstream: upstream.baseURL)
        #expect(try answer?.get() == "[" + media.topics.map { MediaUpstream.row($0, loaded: 1) }.joined(separator: ",") + "]")
        #expect(upstream.requests.map(\.uri).filter { $0.contains("?") }.isEmpty, "a first page is asked for without a cursor")
        #expect(upstream.requests.filter { $0.path != "/topics" }.maxInFlight > 1, "first pages are fetched concurrently")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("no more first pages are in flight than the configured concurrency")
    func firstPagesConcurrencyBound() async throws {
        let media = MediaUpstream(topics: ["a", "b", "c", "d", "e", "f", "g"])
        let upstream = try await ScriptedUpstream.start { request in
            var reply = media.reply(to: request)
            reply.delay = request.path == "/topics" ? .zero : .milliseconds(30)
            return reply
        }
        let harness = try await Harness()
        let answer = try await harness.firstPages(Self.definition(concurrency: 2), upstream: upstream.baseURL)
        #expect(try answer?.get() == "[" + media.topics.map { MediaUpstream.row($0, loaded: 1) }.joined(separator: ",") + "]")
        let pages = upstream.requests.filter { $0.path != "/topics" }
        #expect(pages.count == 7)
        #expect(pages.maxInFlight == 2)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a row whose first page fails is kept with no items and marked with the error; the other rows are whole")
    func firstPageFailureMarksItsRow() async throws {
        let media = MediaUpstream(topics: ["a", "b", "c", "d"])
        let upstream = try await ScriptedUpstream.start { request in
            switch MediaUpstream.page(askedBy: request)?.topic {
            case "b": .json(#"{"error":"down"}"#, status: 500)
            case "c": .json(#"{"result":{"not":"a list"},"next":null}"#)
            default: media.reply(to: request)
            }
        }
        let harness = try await Harness()
        let answer = try await harness.firstPages(upstream: upstream.baseURL)
        #expect(try answer?.get() == MediaUpstream.rows(
            MediaUpstream.row("a", loaded: 1),
            #"{"topic":{"id":"b"},"medias":[],"error":{"code":"upstream_status","message":"upstream media: GET /topics/b/medias answered 500"}}"#,
            #"{"topic":{"id":"c"},"medias":[],"error":{"code":"upstream_malformed","# +
                #""message":"upstream media: GET /topics/c/medias: expected an array at result, found an object"}}"#,
            MediaUpstream.row("d", loaded: 1)))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an item without a usable id is kept, marked invalid_item_id, and costs no call; a number id is used as its digits")
    func itemsWithoutUsableIDs() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/topics" { return .json(#"{"result":[{"id":".."},{"name":"no id"},{"id":7},{"id":true},{"id":""}]}"#) }
            return .json(#"{"result":["m"],"next":null}"#)
        }
        let harness = try await Harness()
        let rows = try JSON(parsing: Array(try #require(try await harness.firstPages(upstream: upstream.baseURL)).get().utf8)).arrayValue ?? []
        #expect(rows.map { $0["error"]?["code"]?.stringValue } == ["invalid_item_id", "invalid_item_id", nil, "invalid_item_id", "invalid_item_id"])
        #expect(rows[2] == (try JSON(parsing: Array(#"{"topic":{"id":7},"medias":["m"]}"#.utf8))))
        #expect(rows[1]["error"]?["message"] == .string("an item of /topics has no usable `id`"))
        #expect(rows.map { $0["topic"] } == [
            .object([("id", .string(".."))]), .object([("name", .string("no id"))]), .object([("id", .number("7"))]),
            .object([("id", .bool(true))]), .object([("id", .string(""))]),
        ])
        #expect(upstream.requests.map(\.uri) == ["/topics", "/topics/7/medias"])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an empty list answers [] with no page call")
    func emptyList() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json(#"{"result":[]}"#) }
        let harness = try await Harness()
        #expect(try await harness.firstPages(upstream: upstream.baseURL)?.get() == "[]")
        #expect(upstream.requests.map(\.uri) == ["/topics"])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a failing list fails the JSON answer and the live rows, naming the upstream and the path",
          arguments: [Harness.Answer.firstPages, .rows])
    func listFailures(answer: Harness.Answer) async throws {
        let upstream = try await ScriptedUpstream.start { request in
            switch request.query["case"] {
            case "status": .json(#"{"error":"down"}"#, status: 503)
            case "garbage": .text("<html>not json</html>")
            default: .json(#"{"result":{"topics":[]}}"#)
            }
        }
        let expectations: [(String, ResourceError.Code, String)] = [
            ("status", .upstreamStatus, "upstream media: GET /topics?case=status answered 503"),
            ("garbage", .upstreamMalformed, "upstream media: GET /topics?case=garbage returned malformed JSON"),
            ("shape", .upstreamMalformed, "upstream media: GET /topics?case=shape: expected an array at result, found an object"),
        ]
        for (name, code, message) in expectations {
            var definition = Self.definition()
            definition.listPath = UpstreamPath("/topics?case=\(name)")!
            let harness = try await Harness()
            let subscription = try await harness.start(answer, definition, upstream: upstream.baseURL)
            #expect(await harness.ending.wait(timeout: .seconds(10)) { $0 != nil })
            guard case .failed(let error)? = harness.ending.value else {
                Issue.record("\(name): expected a failure, got \(String(describing: harness.ending.value))")
                continue
            }
            #expect(error.code == code, "\(name)")
            #expect(error.status == 502, "\(name)")
            #expect(error.upstream == "media", "\(name)")
            #expect(error.path == "/topics?case=\(name)", "\(name)")
            #expect(error.message.hasPrefix(message), "\(name): \(error.message)")
            #expect(harness.documents.value.isEmpty, "\(name)")
            try await harness.cancel(subscription)
            await harness.stop()
        }
        #expect(upstream.requests.allSatisfy { $0.path == "/topics" }, "no page is asked for without a list")
        await upstream.shutdown()
    }

    @Test("cancelling the JSON answer cancels every first page in flight: the upstream sees each close")
    func firstPagesCancellation() async throws {
        let media = MediaUpstream(topics: ["a", "b", "c", "d"])
        let upstream = try await ScriptedUpstream.start { request in request.path == "/topics" ? media.reply(to: request) : .hang }
        let harness = try await Harness()
        // A deadline far beyond the waits: on a loaded machine the page calls must not end by
        // timing out before the cancel.
        let subscription = try await harness.start(
            .firstPages, Self.definition(concurrency: 3), upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 4 })
        try await harness.cancel(subscription)
        #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
            records.filter { $0.path != "/topics" }.allSatisfy(\.closedByClient)
        })
        #expect(upstream.requests.count == 4, "the fourth page, waiting for a place, is never asked for")
        #expect(harness.ending.value == nil)
        #expect(harness.documents.value.isEmpty)
        await harness.stop()
        await upstream.shutdown()
    }

    // MARK: - The live rows: pages loaded on loadMore

    @Test("the live rows start with every first page, then each loadMore appends that item's next page, in order")
    func loadMoreAppendsPagesInOrder() async throws {
        let media = MediaUpstream(topics: ["a", "b"])
        let upstream = try await ScriptedUpstream.start { media.reply(to: $0) }
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 1), MediaUpstream.row("b", loaded: 1))))
        #expect(await harness.pagesLoaded.wait(timeout: .seconds(10)) { $0.count == 2 })

        try await harness.loadMore("b")
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 1), MediaUpstream.row("b", loaded: 2))))
        try await harness.loadMore("b")
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 1), MediaUpstream.row("b", loaded: 3))))
        try await harness.loadMore("a")
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 2), MediaUpstream.row("b", loaded: 3))))

        #expect(Self.pageCalls("b", upstream) == ["/topics/b/medias", "/topics/b/medias?cursor=c2", "/topics/b/medias?cursor=c3"])
        #expect(Self.pageCalls("a", upstream) == ["/topics/a/medias", "/topics/a/medias?cursor=c2"])
        #expect(harness.documents.value.count == 4, "one document per page loaded after the first pages")
        #expect(harness.ending.value == nil, "a's last page is still to come")
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the cursor goes in the configured parameter percent-encoded; a number cursor goes as its digits")
    func cursorEncoding() async throws {
        let cursors: [String: String] = ["a": #""a b&c=d/é?#""#, "b": "20"]
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/topics" { return .json(#"{"result":[{"id":"a"},{"id":"b"}]}"#) }
            let topic = String(request.path.split(separator: "/")[1])
            if request.query["page"] == nil { return .json(#"{"result":["\#(topic)1"],"next":\#(cursors[topic]!)}"#) }
            return .json(#"{"result":["\#(topic)2"],"next":null}"#)
        }
        var definition = Self.definition()
        definition.cursorParameter = "page"
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, definition, upstream: upstream.baseURL)
        #expect(await harness.pagesLoaded.wait(timeout: .seconds(10)) { $0.count == 2 })
        try await harness.loadMore("a", "b")
        #expect(await harness.published(#"[{"topic":{"id":"a"},"medias":["a1","a2"]},{"topic":{"id":"b"},"medias":["b1","b2"]}]"#))
        #expect(Self.pageCalls("a", upstream) == ["/topics/a/medias", "/topics/a/medias?page=a%20b%26c%3Dd%2F%C3%A9%3F%23"])
        #expect(Self.pageCalls("b", upstream) == ["/topics/b/medias", "/topics/b/medias?page=20"])
        #expect(upstream.requests.first { $0.uri.hasPrefix("/topics/a/medias?") }?.query["page"] == "a b&c=d/é?#")
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a page path with a query of its own keeps it: the cursor follows it after &")
    func pagePathWithQuery() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/topics" { return .json(#"{"result":[{"id":"a"}]}"#) }
            return request.query["cursor"] == nil ? .json(#"{"result":["a1"],"next":"c2"}"#) : .json(#"{"result":["a2"],"next":null}"#)
        }
        var definition = Self.definition()
        definition.pagePath = "/topics/{id}/medias?size=1"
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, definition, upstream: upstream.baseURL)
        #expect(await harness.published(#"[{"topic":{"id":"a"},"medias":["a1"]}]"#))
        try await harness.loadMore("a")
        #expect(await harness.published(#"[{"topic":{"id":"a"},"medias":["a1","a2"]}]"#))
        #expect(upstream.requests.map(\.uri) == ["/topics", "/topics/a/medias?size=1", "/topics/a/medias?size=1&cursor=c2"])
        #expect(upstream.requests.last?.query == ["size": "1", "cursor": "c2"])
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a page whose cursor is null, missing or not a string or number is the last: the rows finish once every row has its last page")
    func lastPagesFinishTheRows() async throws {
        let nexts = ["a": #","next":null"#, "b": "", "c": #","next":{"cursor":"x"}"#, "d": #","next":true"#]
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/topics" { return .json(#"{"result":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"}]}"#) }
            let topic = String(request.path.split(separator: "/")[1])
            return .json(#"{"result":["\#(topic)1"]\#(nexts[topic]!)}"#)
        }
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.ending.wait(timeout: .seconds(10)) { $0 != nil })
        #expect(harness.ending.value == .finished)
        #expect(harness.documents.value == [
            #"[{"topic":{"id":"a"},"medias":["a1"]},{"topic":{"id":"b"},"medias":["b1"]},"#
                + #"{"topic":{"id":"c"},"medias":["c1"]},{"topic":{"id":"d"},"medias":["d1"]}]"#,
        ])
        #expect(upstream.requests.count == 5)
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("loadMore for an item past its last page, or unknown, calls nothing; the other rows go on")
    func loadMorePastTheLastPage() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/topics" { return .json(#"{"result":[{"id":"a"},{"id":"b"}]}"#) }
            // a has one page; b has two.
            if request.path == "/topics/a/medias" { return .json(#"{"result":["a1"],"next":null}"#) }
            return request.query["cursor"] == nil ? .json(#"{"result":["b1"],"next":"c2"}"#) : .json(#"{"result":["b2"],"next":null}"#)
        }
        let harness = try await Harness(connections: 1)
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.published(#"[{"topic":{"id":"a"},"medias":["a1"]},{"topic":{"id":"b"},"medias":["b1"]}]"#))
        // On the one connection, a call for a or x would reach the upstream before b's.
        try await harness.loadMore("a", "x", "b")
        #expect(await harness.published(#"[{"topic":{"id":"a"},"medias":["a1"]},{"topic":{"id":"b"},"medias":["b1","b2"]}]"#))
        #expect(upstream.requests.map(\.uri) == ["/topics", "/topics/a/medias", "/topics/b/medias", "/topics/b/medias?cursor=c2"])
        #expect(await harness.ending.wait(timeout: .seconds(10)) { $0 != nil })
        #expect(harness.ending.value == .finished, "b's last page was the last to come")
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("loadMore while the item's page is loading is ignored, not queued")
    func loadMoreWhileLoading() async throws {
        let media = MediaUpstream(topics: ["a", "b"])
        let upstream = try await ScriptedUpstream.start { media.reply(to: $0) }
        let harness = try await Harness(connections: 1)
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 1), MediaUpstream.row("b", loaded: 1))))
        try await harness.loadMore("a", "a", "a")
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 2), MediaUpstream.row("b", loaded: 1))))
        // Had an activation been kept for later, a's third page would have been asked for
        // when its second arrived: before b's, on the one connection.
        try await harness.loadMore("b")
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 2), MediaUpstream.row("b", loaded: 2))))
        #expect(Self.pageCalls("a", upstream) == ["/topics/a/medias", "/topics/a/medias?cursor=c2"])
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a row whose next page fails keeps the pages it loaded, marked with the error, and loads no more; the other rows go on")
    func nextPageFailureKeepsTheRow() async throws {
        let media = MediaUpstream(topics: ["a", "b"])
        let upstream = try await ScriptedUpstream.start { request in
            request.uri == "/topics/a/medias?cursor=c2" ? .json("{}", status: 502) : media.reply(to: request)
        }
        let harness = try await Harness(connections: 1)
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.published(MediaUpstream.rows(MediaUpstream.row("a", loaded: 1), MediaUpstream.row("b", loaded: 1))))
        try await harness.loadMore("a")
        let failedRow = #"{"topic":{"id":"a"},"medias":["a1","a2"],"#
            + #""error":{"code":"upstream_status","message":"upstream media: GET /topics/a/medias?cursor=c2 answered 502"}}"#
        #expect(await harness.published(MediaUpstream.rows(failedRow, MediaUpstream.row("b", loaded: 1))))
        try await harness.loadMore("a", "b")
        #expect(await harness.published(MediaUpstream.rows(failedRow, MediaUpstream.row("b", loaded: 2))))
        #expect(Self.pageCalls("a", upstream) == ["/topics/a/medias", "/topics/a/medias?cursor=c2"])
        #expect(harness.ending.value == nil)
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("knownIDs is told the ids of the list's items; pageLoaded, an item's id after each of its pages arrived or failed")
    func knownIDsAndPagesLoaded() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            switch request.uri {
            case "/topics": .json(#"{"result":[{"id":"a"},{"id":7},{"name":"no id"}]}"#)
            case "/topics/a/medias": .json(#"{"result":["a1"],"next":"c2"}"#)
            case "/topics/a/medias?cursor=c2": .json("{}", status: 500)
            default: .json(#"{"result":["m"],"next":"c2"}"#)
            }
        }
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL)
        #expect(await harness.pagesLoaded.wait(timeout: .seconds(10)) { $0.count == 2 })
        #expect(harness.knownIDs.value == [["a", "7"]])
        #expect(Set(harness.pagesLoaded.value) == ["a", "7"], "an item without an id has no loadMore to enable")
        try await harness.loadMore("a")
        #expect(await harness.pagesLoaded.wait(timeout: .seconds(10)) { $0.count == 3 })
        #expect(harness.pagesLoaded.value.last == "a", "a failed page counts")
        try await harness.cancel(subscription)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("cancelling the live rows cancels the pages in flight, first and next: the upstream sees each close")
    func rowsCancellation() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            switch request.uri {
            case "/topics": .json(#"{"result":[{"id":"a"},{"id":"b"}]}"#)
            case "/topics/a/medias": .json(#"{"result":["a1"],"next":"c2"}"#)
            default: .hang
            }
        }
        let harness = try await Harness()
        let subscription = try await harness.start(.rows, upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        #expect(await harness.pagesLoaded.wait(timeout: .seconds(10)) { $0 == ["a"] })
        try await harness.loadMore("a")
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 4 })
        try await harness.cancel(subscription)
        let hanging: Set = ["/topics/b/medias", "/topics/a/medias?cursor=c2"]
        #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
            let calls = records.filter { hanging.contains($0.uri) }
            return calls.count == 2 && calls.allSatisfy(\.closedByClient)
        })
        #expect(harness.ending.value == nil)
        #expect(harness.documents.value.isEmpty, "b's first page never came")
        await harness.stop()
        await upstream.shutdown()
    }
}
