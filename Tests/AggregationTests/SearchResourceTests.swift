import Aggregation
import EventLoop
import HTTPCore
import OpenCombine
import Testing
import TributaryTesting
import UpstreamClient

@Suite("Search resource: a query passed to an upstream search, its items answered unchanged")
struct SearchResourceTests {
    static func definition(path: String = "/search/repositories", itemsAt: String = "items", minimumLength: Int = 3) -> SearchResource.Definition {
        SearchResource.Definition(path: UpstreamPath(path)!, parameter: "q", itemsAt: JSONPath(itemsAt), minimumLength: minimumLength, debounce: .milliseconds(300))
    }

    /// Searches of a `search` upstream on a loop thread of their own.
    final class Harness: Sendable {
        typealias Outcome = Result<String, ResourceError>
        let thread: LoopThread
        let client: LoopBound<UpstreamClient>
        let outcome = Observed<Outcome?>(nil)

        init() async throws {
            thread = try LoopThread()
            client = try await thread.run { loop in LoopBound(UpstreamClient(loop: loop), loop: loop) }
        }

        /// Starts the search for `query`; its outcome (the results as JSON text) lands in `outcome`.
        func start(
            _ query: String, _ definition: SearchResource.Definition = SearchResourceTests.definition(), upstream url: String,
            policy: Upstream.Policy = .init(timeout: .seconds(2), retries: 0)
        ) async throws -> LoopBound<AnyCancellable> {
            let base = try BaseURL(url)
            return try await thread.run { [client, outcome] loop in
                let upstream = Upstream(name: "search", base: base, policy: policy, client: client.value)
                let resource = SearchResource(name: "search", upstream: upstream, definition: definition)
                let cancellable = resource.results(for: query, trace: TraceContext()).sink(
                    receiveCompletion: { completion in
                        if case .failure(let error) = completion { outcome.update { $0 = .failure(error) } }
                    },
                    receiveValue: { results in outcome.update { $0 = .success(String(decoding: results.serialized, as: UTF8.self)) } })
                return LoopBound(cancellable, loop: loop)
            }
        }

        /// The results for `query`, or the search's failure; nil if neither came.
        func search(
            _ query: String, _ definition: SearchResource.Definition = SearchResourceTests.definition(), upstream url: String,
            policy: Upstream.Policy = .init(timeout: .seconds(2), retries: 0)
        ) async throws -> Outcome? {
            outcome.update { $0 = nil }
            let subscription = try await start(query, definition, upstream: url, policy: policy)
            _ = await outcome.wait(timeout: .seconds(10)) { $0 != nil }
            try await thread.run { _ in subscription.release() }
            return outcome.value
        }

        func stop() async {
            await thread.stop { [client] in client.release() }
        }
    }

    /// A search upstream whose results are `items` for any query.
    static func upstream(answering body: String) async throws -> ScriptedUpstream {
        try await ScriptedUpstream.start { _ in .json(body) }
    }

    @Test("a query shorter than the minimum length, in characters, answers [] without calling the upstream")
    func shortQueries() async throws {
        let upstream = try await Self.upstream(answering: #"{"items":[1]}"#)
        let harness = try await Harness()
        // "é" written as e and a combining accent is one character of two scalars, three bytes.
        for query in ["", "s", "sw", "éé", "e\u{301}e\u{301}", "👩‍👩‍👧‍👦👍"] {
            #expect(try await harness.search(query, upstream: upstream.baseURL)?.get() == "[]", "\(query)")
        }
        #expect(upstream.requests.isEmpty)
        #expect(try await harness.search("e\u{301}e\u{301}e\u{301}", upstream: upstream.baseURL)?.get() == "[1]", "three characters")
        #expect(upstream.requests.count == 1)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("with a minimum length of 0, even the empty query is searched")
    func emptyQuerySearchedAtMinimumZero() async throws {
        let upstream = try await Self.upstream(answering: #"{"items":["all"]}"#)
        let harness = try await Harness()
        #expect(try await harness.search("", Self.definition(minimumLength: 0), upstream: upstream.baseURL)?.get() == #"["all"]"#)
        #expect(upstream.requests.map(\.uri) == ["/search/repositories?q="])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the results are the upstream's items unchanged and in its order: members, numbers and strings as sent")
    func itemsUnchanged() async throws {
        let items = #"[{"name":"vapor","stars":1.50,"tags":["a","b"],"owner":null},{"z":1,"a":2,"é":"ü"},3,"four",true]"#
        let upstream = try await Self.upstream(answering: #"{"total_count":5,"items":\#(items),"incomplete_results":false}"#)
        let harness = try await Harness()
        #expect(try await harness.search("swift", upstream: upstream.baseURL)?.get() == items)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the query is percent-encoded as the value of the configured parameter")
    func queryPercentEncoded() async throws {
        let upstream = try await Self.upstream(answering: #"{"items":[]}"#)
        let harness = try await Harness()
        let query = "a b&c=d/é+?#%"
        #expect(try await harness.search(query, upstream: upstream.baseURL)?.get() == "[]")
        #expect(upstream.requests.map(\.uri) == ["/search/repositories?q=a%20b%26c%3Dd%2F%C3%A9%2B%3F%23%25"])
        #expect(upstream.requests.first?.query == ["q": query], "the upstream reads back the query, and no other parameter")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a search path that has a query already gets the parameter after it")
    func pathWithQuery() async throws {
        let upstream = try await Self.upstream(answering: #"{"items":[]}"#)
        let harness = try await Harness()
        _ = try await harness.search("swift", Self.definition(path: "/search?type=repo"), upstream: upstream.baseURL)
        #expect(upstream.requests.map(\.uri) == ["/search?type=repo&q=swift"])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the items are read where the items path says: nested, or the whole body")
    func itemsPath() async throws {
        let nested = try await Self.upstream(answering: #"{"items":["top"],"data":{"hits":["deep"]}}"#)
        let whole = try await Self.upstream(answering: #"["whole","body"]"#)
        let harness = try await Harness()
        #expect(try await harness.search("swift", Self.definition(itemsAt: "data.hits"), upstream: nested.baseURL)?.get() == #"["deep"]"#)
        #expect(try await harness.search("swift", Self.definition(itemsAt: ""), upstream: whole.baseURL)?.get() == #"["whole","body"]"#)
        await harness.stop()
        await nested.shutdown()
        await whole.shutdown()
    }

    @Test("failures name the upstream and the call: 5xx → 502, timeout → 504, not JSON or no array at the items path → 502 malformed")
    func failures() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            switch request.query["q"] {
            case "status": .json(#"{"error":"down"}"#, status: 500)
            case "hang": .hang
            case "garbage": .text("<html>not json</html>")
            case "object": .json(#"{"items":{"0":"a"}}"#)
            default: .json(#"{"results":[]}"#)
            }
        }
        let expectations: [(String, ResourceError.Code, Int, String)] = [
            ("status", .upstreamStatus, 502, "upstream search: GET /search/repositories?q=status answered 500"),
            ("hang", .upstreamTimeout, 504, "upstream search: GET /search/repositories?q=hang failed: "),
            ("garbage", .upstreamMalformed, 502, "upstream search: GET /search/repositories?q=garbage returned malformed JSON"),
            ("object", .upstreamMalformed, 502, "upstream search: GET /search/repositories?q=object: expected an array at items, found an object"),
            ("missing", .upstreamMalformed, 502, "upstream search: GET /search/repositories?q=missing: expected an array at items, found nothing"),
        ]
        let harness = try await Harness()
        for (query, code, status, message) in expectations {
            let outcome = try await harness.search(query, upstream: upstream.baseURL, policy: .init(timeout: .milliseconds(300), retries: 0))
            guard case .failure(let error) = outcome else {
                Issue.record("\(query): expected a failure, got \(String(describing: outcome))")
                continue
            }
            #expect(error.code == code, "\(query)")
            #expect(error.status == status, "\(query)")
            #expect(error.upstream == "search", "\(query)")
            #expect(error.path == "/search/repositories?q=\(query)", "\(query)")
            #expect(error.message.hasPrefix(message), "\(query): \(error.message)")
        }
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("cancelling a search cancels its call in flight: the upstream sees it close")
    func cancellation() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .hang }
        let harness = try await Harness()
        let subscription = try await harness.start("swift", upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 1 })
        try await harness.thread.run { _ in
            subscription.value.cancel()
            subscription.release()
        }
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.first?.closedByClient == true })
        #expect(harness.outcome.value == nil)
        await harness.stop()
        await upstream.shutdown()
    }
}
