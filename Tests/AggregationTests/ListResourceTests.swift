import Aggregation
import EventLoop
import HTTPCore
import UpstreamClient
import OpenCombine
import Synchronization
import Testing
import TributaryTesting

@Suite("List resource: a list merged with per-item details")
struct ListResourceTests {
    static func definition(concurrency: Int = 16, onItemFailure: ListResource.ItemFailurePolicy = .mark) -> ListResource.Definition {
        ListResource.Definition(
            listPath: "/groups", itemsAt: JSONPath("result"), idMember: "id",
            detailPath: "/groups/{id}/metadata", detailAt: JSONPath("result"),
            concurrency: concurrency, onItemFailure: onItemFailure)
    }

    /// Snapshots of a `groups` resource on a loop thread of their own.
    final class Harness: Sendable {
        typealias Outcome = Result<String, ResourceError>
        let thread: LoopThread
        let client: LoopBound<UpstreamClient>
        let outcome = Observed<Outcome?>(nil)

        init() async throws {
            thread = try LoopThread()
            client = try await thread.run { loop in LoopBound(UpstreamClient(loop: loop), loop: loop) }
        }

        /// Starts one snapshot; its outcome (the document as JSON text) lands in `outcome`.
        func start(
            _ definition: ListResource.Definition, upstream url: String,
            policy: Upstream.Policy = .init(timeout: .seconds(2), retries: 0)
        ) async throws -> LoopBound<AnyCancellable> {
            let client = self.client
            let outcome = self.outcome
            let base = try BaseURL(url)
            return try await thread.run { loop in
                let upstream = Upstream(name: "tasks", base: base, policy: policy, client: client.value)
                let resource = ListResource(name: "groups", upstream: upstream, definition: definition)
                let cancellable = resource.snapshot(trace: TraceContext()).sink(
                    receiveCompletion: { completion in
                        if case .failure(let error) = completion { outcome.update { $0 = .failure(error) } }
                    },
                    receiveValue: { document in outcome.update { $0 = .success(String(decoding: document.serialized, as: UTF8.self)) } })
                return LoopBound(cancellable, loop: loop)
            }
        }

        /// One whole snapshot.
        func snapshot(
            _ definition: ListResource.Definition, upstream url: String,
            policy: Upstream.Policy = .init(timeout: .seconds(2), retries: 0)
        ) async throws -> Outcome? {
            let subscription = try await start(definition, upstream: url, policy: policy)
            _ = await outcome.wait(timeout: .seconds(10)) { $0 != nil }
            try await thread.run { _ in subscription.release() }
            return outcome.value
        }

        func stop() async {
            let client = self.client
            await thread.stop { client.release() }
        }
    }

    @Test("items come out in list order whatever order their details answer in")
    func listOrder() async throws {
        let fixture = TaskGroupsFixture(count: 12)
        let upstream = try await ScriptedUpstream.start { request in
            let index = fixture.groups.firstIndex { $0 == fixture.group(forMetadataPath: request.path) } ?? 0
            return fixture.reply(to: request, delay: .milliseconds(25 * (11 - index)))!
        }
        let harness = try await Harness()
        let outcome = try await harness.snapshot(Self.definition(), upstream: upstream.baseURL)
        #expect(try outcome?.get() == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path != "/groups" }.maxInFlight > 1, "details are fetched concurrently")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("no more detail calls are in flight than the configured concurrency")
    func concurrencyLimit() async throws {
        let fixture = TaskGroupsFixture(count: 10)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: .milliseconds(20))! }
        let harness = try await Harness()
        let outcome = try await harness.snapshot(Self.definition(concurrency: 3), upstream: upstream.baseURL)
        #expect(try outcome?.get() == fixture.mergedJSON)
        let details = upstream.requests.filter { $0.path != "/groups" }
        #expect(details.count == 10)
        #expect(details.maxInFlight == 3)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an item whose details fail is kept and marked with its error (default policy)")
    func itemFailureMarked() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let broken = fixture.groups[1]
        let upstream = try await ScriptedUpstream.start { request in
            fixture.group(forMetadataPath: request.path) == broken ? .json(#"{"oops":true}"#, status: 500) : fixture.reply(to: request)!
        }
        let harness = try await Harness()
        let text = try #require(try await harness.snapshot(Self.definition(), upstream: upstream.baseURL)).get()
        let items = try JSON(parsing: Array(text.utf8)).arrayValue ?? []
        #expect(items.count == 4)
        #expect(items[1]["id"] == .string(broken.id))
        #expect(items[1]["taskCount"] == nil)
        #expect(items[1]["error"]?["code"] == .string("upstream_status"))
        #expect(items[1]["error"]?["message"]?.stringValue?.contains("/groups/\(broken.id)/metadata") == true)
        #expect(items[2] == (try JSON(parsing: Array(fixture.mergedJSON(of: fixture.groups[2]).utf8))))
        await harness.stop()
        await upstream.shutdown()
    }

    /// Detail answers of every shape the merge meets, each item's answer compared with
    /// merging the parsed trees: the kept texts' fast way (the details' object read from the
    /// answer's text, spliced after the item's) must give the same bytes, and every other
    /// shape must still take the general way (shared names, `{}`, a repeated member, text that
    /// is not canonical) or fail as malformed (missing, not an object, an object on the way
    /// missing).
    @Test("each item is merged with its details as the parsed trees merge, whatever the detail answer's shape",
          arguments: ["result", "data.result"])
    func detailShapes(detailAt: String) async throws {
        let details = [
            #"{"result":{"taskCount":8,"lastUpdated":"2026-11-02T01:01:00Z"}}"#,
            #"{"result":{"name":"B","taskCount":7}}"#,
            #"{"result":{}}"#,
            #"{"other":{"result":{"n":0}},"result":{"n":"}{]["},"result":{"n":3}}"#,
            #"{ "result": {"n":1} }"#,
            #"{"result":{"n":{"deep":[{"id":"nested"}]},"m":"é"}}"#,
            #"{"result":[1]}"#,
            #"{"results":{"n":1}}"#,
            #"{"result":"text"}"#,
        ]
        // Under `data.result`, each answer is the same one a level down; `data` missing or not an
        // object fails the item too.
        let bodies = detailAt == "result" ? details : details.map { #"{"data":"# + $0 + "}" } + [#"{"data":[]}"#, #"{"result":{}}"#]
        let items = bodies.indices.map { #"{"id":"i\#($0)","name":"Item \#($0)"}"# }
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/groups" { return .json(#"{"result":["# + items.joined(separator: ",") + "]}") }
            guard let index = bodies.indices.first(where: { request.path == "/groups/i\($0)/metadata" }) else { return .json("{}", status: 404) }
            return .json(bodies[index])
        }
        var definition = Self.definition()
        definition.detailAt = JSONPath(detailAt)
        let harness = try await Harness()
        let text = try #require(try await harness.snapshot(definition, upstream: upstream.baseURL)).get()
        let answered = try #require(try JSON(parsing: Array(text.utf8)).arrayValue)
        try #require(answered.count == bodies.count)
        for (index, body) in bodies.enumerated() {
            let item = try JSON(parsing: Array(items[index].utf8))
            let merged = JSONPath(detailAt).value(in: try JSON(parsing: Array(body.utf8))).flatMap { ListResource.merge(item, details: $0) }
            if let merged {
                #expect(answered[index].serialized == merged.serialized, "\(body)")
            } else {
                #expect(answered[index]["error"]?["code"] == .string("upstream_malformed"), "\(body)")
            }
        }
        // The answer's text is the same whether or not its parts were spliced (the entity tag
        // depends on it): every merge above is written as the parsed tree writes it.
        #expect(text.utf8.elementsEqual(JSON.array(answered).serialized))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the drop and fail policies leave the item out, or fail the whole snapshot")
    func otherItemPolicies() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let upstream = try await ScriptedUpstream.start { request in
            fixture.group(forMetadataPath: request.path) == fixture.groups[0] ? .json("{}", status: 503) : fixture.reply(to: request)!
        }
        let harness = try await Harness()
        let dropped = try await harness.snapshot(Self.definition(onItemFailure: .drop), upstream: upstream.baseURL)
        #expect(try dropped?.get() == "[" + fixture.groups.dropFirst().map(fixture.mergedJSON(of:)).joined(separator: ",") + "]")
        let failing = try await Harness()
        let failed = try await failing.snapshot(Self.definition(onItemFailure: .fail), upstream: upstream.baseURL)
        guard case .failure(let error) = failed else {
            Issue.record("expected the snapshot to fail, got \(String(describing: failed))")
            return
        }
        #expect(error.code == .upstreamStatus)
        #expect(error.status == 502)
        await harness.stop()
        await failing.stop()
        await upstream.shutdown()
    }

    @Test("list failures name the upstream and path: 5xx → 502, timeout → 504, not JSON → 502 malformed")
    func listFailures() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            switch request.query["case"] {
            case "status": .json(#"{"error":"down"}"#, status: 500)
            case "hang": .hang
            case "garbage": .text("<html>not json</html>")
            default: .json(#"{"result":"not a list"}"#)
            }
        }
        var expectations: [(String, ResourceError.Code, Int, String)] = [
            ("status", .upstreamStatus, 502, "answered 500"),
            ("hang", .upstreamTimeout, 504, "no response within"),
            ("garbage", .upstreamMalformed, 502, "malformed JSON"),
            ("shape", .upstreamMalformed, 502, "expected an array at result, found a string"),
        ]
        for (name, code, status, phrase) in expectations {
            var definition = Self.definition()
            definition.listPath = UpstreamPath("/groups?case=\(name)")!
            let harness = try await Harness()
            let outcome = try await harness.snapshot(definition, upstream: upstream.baseURL, policy: .init(timeout: .milliseconds(300), retries: 0))
            guard case .failure(let error) = outcome else {
                Issue.record("\(name): expected a failure, got \(String(describing: outcome))")
                continue
            }
            #expect(error.code == code, "\(name)")
            #expect(error.status == status, "\(name)")
            #expect(error.message.contains("upstream tasks"), "\(name): \(error.message)")
            #expect(error.message.contains("/groups?case=\(name)"), "\(name): \(error.message)")
            #expect(error.message.contains(phrase), "\(name): \(error.message)")
            await harness.stop()
        }
        expectations.removeAll()
        await upstream.shutdown()
    }

    @Test("a 503 is retried after the backoff, and the retry's answer is used")
    func retries() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let listCalls = Mutex(0)
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/groups" {
                let call = listCalls.withLock { calls in
                    calls += 1
                    return calls
                }
                if call == 1 { return .json("{}", status: 503) }
            }
            return fixture.reply(to: request)!
        }
        let harness = try await Harness()
        let outcome = try await harness.snapshot(
            Self.definition(), upstream: upstream.baseURL, policy: .init(timeout: .seconds(2), retries: 2, backoff: .milliseconds(50)))
        #expect(try outcome?.get() == fixture.mergedJSON)
        let lists = upstream.requests.filter { $0.path == "/groups" }
        #expect(lists.count == 2)
        #expect(lists[1].startedAt - lists[0].startedAt >= .milliseconds(50))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an answer over the upstream's maxResponseBytes fails at once, 502, and is not retried")
    func oversizedAnswerIsNotRetried() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .json(#"{"result":[]}"# + String(repeating: " ", count: 8000)) }
        let harness = try await Harness()
        let outcome = try await harness.snapshot(
            Self.definition(), upstream: upstream.baseURL,
            policy: .init(timeout: .seconds(2), retries: 3, backoff: .milliseconds(10), maxResponseBytes: 4096))
        guard case .failure(let error) = outcome else {
            Issue.record("an oversized list was accepted: \(String(describing: outcome))")
            return
        }
        #expect(error.code == .upstreamUnavailable)
        #expect(error.status == 502)
        #expect(error.message.contains("response_too_large"))
        #expect(upstream.requests.count == 1)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("ids are percent-encoded as one path segment; dot-segment ids are refused without a call")
    func idsCannotEscapeTheirSegment() async throws {
        let ids = ["../../admin", "a/b", "x?y#z", "Grüße", "..", "50%"]
        let fixture = TaskGroupsFixture(groups: ids.map { .init(id: $0, name: "n", taskCount: 1, lastUpdated: "t") })
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0) ?? .json("{}", status: 404) }
        let harness = try await Harness()
        let text = try #require(try await harness.snapshot(Self.definition(), upstream: upstream.baseURL)).get()
        let requested = Set(upstream.requests.map(\.uri))
        #expect(requested == [
            "/groups", "/groups/..%2F..%2Fadmin/metadata", "/groups/a%2Fb/metadata", "/groups/x%3Fy%23z/metadata",
            "/groups/Gr%C3%BC%C3%9Fe/metadata", "/groups/50%25/metadata",
        ])
        let items = try JSON(parsing: Array(text.utf8)).arrayValue ?? []
        #expect(items.map { $0["id"] } == ids.map { JSON.string($0) })
        #expect(items[4]["error"]?["code"] == .string("invalid_item_id"))
        #expect(items[0]["taskCount"] == .number("1"))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a path template writes its prefix, the id percent-encoded as one segment, and its suffix")
    func pathTemplateEncodesTheID() throws {
        let template = try #require(PathTemplate("/groups/{id}/metadata"))
        #expect(template.path(for: "42") == "/groups/42/metadata")
        #expect(template.path(for: "a b/c?d#e%") == "/groups/a%20b%2Fc%3Fd%23e%25/metadata")
        #expect(template.path(for: "Grüße") == "/groups/Gr%C3%BC%C3%9Fe/metadata")
        #expect(template.path(for: "...") == "/groups/.../metadata")
        #expect(template.path(for: ".a") == "/groups/.a/metadata")
        for refused in ["", ".", ".."] { #expect(template.path(for: refused) == nil) }
        #expect(try #require(PathTemplate("/{id}")).path(for: "x") == "/x")
        // From the id's bytes (as read in place from an item's text), the same paths.
        for id in ["42", "a b/c?d#e%", "Grüße", "...", ".a", "", ".", ".."] {
            var bytes = id
            #expect(bytes.withUTF8(template.path(forID:)) == template.path(for: id), "id \(id)")
        }
    }

    @Test("items that end without a call (ids that name no path) complete in place, one at a time, under every policy")
    func itemsEndingAtOnce() async throws {
        // With one call at a time, the first and last items end inside the loop that starts
        // them: the snapshot must still start the next, keep the order and finish after the last.
        let ids = ["..", "a", "."]
        let fixture = TaskGroupsFixture(groups: ids.map { .init(id: $0, name: "n", taskCount: 1, lastUpdated: "t") })
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0) ?? .json("{}", status: 404) }

        let marked = try await Harness()
        let text = try #require(try await marked.snapshot(Self.definition(concurrency: 1), upstream: upstream.baseURL)).get()
        let items = try JSON(parsing: Array(text.utf8)).arrayValue ?? []
        #expect(items.map { $0["id"] } == ids.map { JSON.string($0) })
        #expect(items[0]["error"]?["code"] == .string("invalid_item_id"))
        #expect(items[1]["taskCount"] == .number("1"))
        #expect(items[2]["error"]?["code"] == .string("invalid_item_id"))
        await marked.stop()

        let dropped = try await Harness()
        let kept = try #require(try await dropped.snapshot(Self.definition(concurrency: 1, onItemFailure: .drop), upstream: upstream.baseURL)).get()
        #expect(try JSON(parsing: Array(kept.utf8)).arrayValue?.map { $0["id"] } == [.string("a")])
        await dropped.stop()

        let failed = try await Harness()
        let outcome = try #require(try await failed.snapshot(Self.definition(concurrency: 1, onItemFailure: .fail), upstream: upstream.baseURL))
        guard case .failure(let error) = outcome else { Issue.record("expected a failure, got \(outcome)"); return }
        #expect(error.code == .invalidItemID)
        await failed.stop()

        // The fail policy ended the third snapshot before its one detail call.
        #expect(upstream.requests.map(\.uri) == ["/groups", "/groups/a/metadata", "/groups", "/groups/a/metadata", "/groups"])
        await upstream.shutdown()
    }

    @Test("cancelling a snapshot cancels every detail call in flight: the upstream sees each close")
    func cancellation() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let upstream = try await ScriptedUpstream.start { request in request.path == "/groups" ? fixture.reply(to: request)! : .hang }
        let harness = try await Harness()
        // A deadline far beyond the waits: on a loaded machine the detail calls must not end
        // by timing out before the cancel (the snapshot would then finish with them marked).
        let subscription = try await harness.start(
            Self.definition(), upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 6 })
        try await harness.thread.run { _ in subscription.value.cancel() }
        #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
            records.filter { $0.path != "/groups" }.allSatisfy(\.closedByClient)
        })
        #expect(harness.outcome.value == nil)
        try await harness.thread.run { _ in subscription.release() }
        await harness.stop()
        await upstream.shutdown()
    }
}
