import Aggregation
import EventLoop
import HTTPCore
import UpstreamClient
import OpenCombine
import Synchronization
import Testing
import TributaryTesting

/// Batched details (`details.batch`, `batchWindow`, `cacheFor`): a list of N items costs
/// ⌈N/max⌉ calls to the upstream's batch endpoint, answered in any order and matched back by
/// id; concurrent snapshots share calls within a window; fetched details are reused for a
/// while. Against a scripted upstream that counts its calls. End to end through a worker:
/// `BatchedGroupsTests`.
@Suite("Batched details: a list's details in batch calls, shared within a window, cached")
struct BatchedDetailsTests {
    static func batched(
        max: Int = 10, style: DetailBatch.Style = .comma, window: Duration = .zero, onItemFailure: ListResource.ItemFailurePolicy = .mark,
        listPath: UpstreamPath = "/groups", batchPath: UpstreamPath = "/groups/metadata", cacheFor: Duration = .zero
    ) -> ListResource.Definition {
        ListResource.Definition(
            listPath: listPath, itemsAt: JSONPath("result"), idMember: "id", detailPath: nil, detailAt: JSONPath("result"),
            concurrency: 16, onItemFailure: onItemFailure,
            batch: DetailBatch(path: batchPath, parameter: "ids", style: style, max: max, itemsAt: JSONPath("result"), idMember: "id"),
            batchWindow: window, cacheFor: cacheFor)
    }

    /// Calls to the batch endpoint.
    static func batchCalls(_ upstream: ScriptedUpstream) -> [RecordedRequest] {
        upstream.requests.filter { $0.path.hasSuffix("/metadata") && $0.path.split(separator: "/").count == 2 }
    }

    /// Calls to a per-item detail endpoint.
    static func itemCalls(_ upstream: ScriptedUpstream) -> [RecordedRequest] {
        upstream.requests.filter { $0.path.hasSuffix("/metadata") && $0.path.split(separator: "/").count == 3 }
    }

    @Test("25 items with max 10 cost 3 batch calls, each id asked once; the answer, matched back from reversed batches, is the unbatched one byte for byte")
    func splitsByMax() async throws {
        let fixture = TaskGroupsFixture(count: 25)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let batched = try await harness.snapshot(Self.batched(max: 10))
        #expect(try batched.get() == fixture.mergedJSON)
        let calls = Self.batchCalls(upstream)
        #expect(calls.count == 3)
        #expect(Self.itemCalls(upstream).isEmpty)
        let asked = calls.map { TaskGroupsFixture.batchIDs(of: $0) }
        #expect(asked.map(\.count) == [10, 10, 5], "in list order, max 10 a call")
        #expect(asked.joined().elementsEqual(fixture.groups.map(\.id)))
        #expect(calls.allSatisfy { $0.uri.hasPrefix("/groups/metadata?ids=") && !$0.uri.contains("&") })
        let unbatched = try await harness.snapshot(ListResourceTests.definition())
        #expect(try unbatched.get().utf8.elementsEqual(try batched.get().utf8))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("style repeat names the parameter once per id; ids are percent-encoded as query values, only the separators raw")
    func styles() async throws {
        let ids = ["a,b", "c d", "e&f=g", "Grüße", "50%", "plain"]
        let fixture = TaskGroupsFixture(groups: ids.map { .init(id: $0, name: "n", taskCount: 1, lastUpdated: "t") })
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0) ?? .json("{}", status: 404) }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        #expect(try await harness.snapshot(Self.batched(max: 50, style: .comma)).get() == fixture.mergedJSON)
        #expect(try await harness.snapshot(Self.batched(max: 50, style: .repeat)).get() == fixture.mergedJSON)
        let calls = Self.batchCalls(upstream)
        #expect(calls.map(\.uri) == [
            "/groups/metadata?ids=a%2Cb,c%20d,e%26f%3Dg,Gr%C3%BC%C3%9Fe,50%25,plain",
            "/groups/metadata?ids=a%2Cb&ids=c%20d&ids=e%26f%3Dg&ids=Gr%C3%BC%C3%9Fe&ids=50%25&ids=plain",
        ])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("ids are told apart by their bytes: K and the Kelvin sign, é and e + U+0301 are four ids asked, each with its own details")
    func idsByBytes() async throws {
        let ids = ["K", "\u{212A}", "\u{E9}", "e\u{301}"]
        #expect(ids[0] == ids[1] && ids[2] == ids[3], "Swift's String equality takes each pair for one")
        let byBytes = Dictionary(uniqueKeysWithValues: ids.enumerated().map { (Array($1.utf8), $0) })
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/groups" {
                return .json(#"{"result":["# + ids.map { #"{"id":"# + JSONWriter.string($0) + "}" }.joined(separator: ",") + "]}")
            }
            let answered = TaskGroupsFixture.batchIDs(of: request).compactMap { id in
                byBytes[Array(id.utf8)].map { #"{"id":"# + JSONWriter.string(id) + #","n":\#($0)}"# }
            }
            return .json(#"{"result":["# + answered.joined(separator: ",") + "]}")
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let document = try await harness.snapshot(Self.batched(max: 10)).get()
        let expected = "[" + ids.enumerated().map { #"{"id":"# + JSONWriter.string($1) + #","n":\#($0)}"# }.joined(separator: ",") + "]"
        #expect(document.utf8.elementsEqual(expected.utf8), "\(document)")
        #expect(Self.batchCalls(upstream).map { TaskGroupsFixture.batchIDs(of: $0).map { Array($0.utf8) } } == [ids.map { Array($0.utf8) }])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("the batch path takes the resource's parameters, encoded into their place, and its own query joins the ids'")
    func parametersInTheBatchPath() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/teams/a%20b/groups" || request.path == "/teams/a b/groups" { return .json(fixture.listJSON) }
            guard request.path.hasSuffix("/groups/metadata") else { return .json("{}", status: 404) }
            return .json(fixture.batchMetadataJSON(for: TaskGroupsFixture.batchIDs(of: request)))
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let definition = Self.batched(listPath: "/teams/{team}/groups", batchPath: "/teams/{team}/groups/metadata?status={status}")
        let outcome = try await harness.snapshot(definition, parameters: ParameterValues(["team": "a b", "status": "open&x"]))
        #expect(try outcome.get() == fixture.mergedJSON)
        #expect(Self.batchCalls(upstream).isEmpty, "a path of four segments")
        let call = try #require(upstream.requests.last)
        #expect(call.uri == "/teams/a%20b/groups/metadata?status=open%26x&ids=" + fixture.groups.map(\.id).joined(separator: ","))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an item the batch answer leaves out is an item failure: marked, dropped, or failing the snapshot")
    func missingItem() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let left = fixture.groups[2].id
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!
                : .json(fixture.batchMetadataJSON(for: TaskGroupsFixture.batchIDs(of: request).filter { $0 != left }))
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let marked = try JSON(parsing: Array(try await harness.snapshot(Self.batched()).get().utf8)).arrayValue ?? []
        #expect(marked.count == 4)
        #expect(marked[2]["id"] == .string(left))
        #expect(marked[2]["taskCount"] == nil)
        #expect(marked[2]["error"]?["code"] == .string("upstream_item_missing"))
        #expect(marked[2]["error"]?["message"] == .string("upstream tasks: GET /groups/metadata?ids=… did not return item \(left)"))
        #expect(marked[3] == (try JSON(parsing: Array(fixture.mergedJSON(of: fixture.groups[3]).utf8))))

        let dropped = try await harness.snapshot(Self.batched(onItemFailure: .drop))
        #expect(try dropped.get() == "[" + fixture.groups.filter { $0.id != left }.map(fixture.mergedJSON(of:)).joined(separator: ",") + "]")

        guard case .failure(let error) = try await harness.snapshot(Self.batched(onItemFailure: .fail)) else {
            Issue.record("expected the snapshot to fail")
            return
        }
        #expect(error.code == .upstreamItemMissing)
        #expect(error.status == 502)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a failed batch call fails its own items, and only those")
    func failedBatch() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/groups/metadata", TaskGroupsFixture.batchIDs(of: request).contains(fixture.groups[0].id) {
                return .json(#"{"error":"down"}"#, status: 500)
            }
            return fixture.reply(to: request)!
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let items = try JSON(parsing: Array(try await harness.snapshot(Self.batched(max: 2)).get().utf8)).arrayValue ?? []
        #expect(Self.batchCalls(upstream).count == 2)
        for index in 0..<2 {
            #expect(items[index]["error"]?["code"] == .string("upstream_status"))
            #expect(items[index]["error"]?["message"] == .string("upstream tasks: GET /groups/metadata?ids=… answered 500"))
        }
        for index in 2..<4 { #expect(items[index] == (try JSON(parsing: Array(fixture.mergedJSON(of: fixture.groups[index]).utf8)))) }

        let failing = try await harness.snapshot(Self.batched(max: 2, onItemFailure: .fail))
        guard case .failure(let error) = failing else {
            Issue.record("expected the snapshot to fail, got \(failing)")
            return
        }
        #expect(error.code == .upstreamStatus)
        #expect(error.path == "/groups/metadata?ids=…")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an id listed twice is asked once and both items get its details; an item without a usable id fails alone")
    func repeatedAndUnusableIDs() async throws {
        let groups = TaskGroupsFixture(count: 2).groups
        let fixture = TaskGroupsFixture(groups: [groups[0], groups[1], groups[0], .init(id: "", name: "empty", taskCount: 0, lastUpdated: "t")])
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let items = try JSON(parsing: Array(try await harness.snapshot(Self.batched()).get().utf8)).arrayValue ?? []
        #expect(Self.batchCalls(upstream).map { TaskGroupsFixture.batchIDs(of: $0) } == [[groups[0].id, groups[1].id]])
        #expect(items[0] == items[2])
        #expect(items[0] == (try JSON(parsing: Array(fixture.mergedJSON(of: groups[0]).utf8))))
        #expect(items[3]["error"]?["code"] == .string("invalid_item_id"))
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("details that are not an object fail their item as malformed; answered items nobody asked for are ignored")
    func oddAnswers() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let ids = fixture.groups.map(\.id)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!
                : .json(#"{"result":[{"id":"stranger","taskCount":1},"text",{"id":"\#(ids[1])","taskCount":5},{"id":"\#(ids[0])","taskCount":2},{"id":"\#(ids[0])","taskCount":9},{"id":"\#(ids[2])"}]}"#)
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let text = try await harness.snapshot(Self.batched()).get()
        #expect(text == "[" + [
            #"{"id":"\#(ids[0])","name":"Group 0","taskCount":2}"#, #"{"id":"\#(ids[1])","name":"Group 1","taskCount":5}"#,
            #"{"id":"\#(ids[2])","name":"Group 2"}"#,
        ].joined(separator: ",") + "]", "the first item of an id counts; an item of only its id adds nothing")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("each item is merged with its answered item as the parsed trees merge, wherever the id member sits in it")
    func answeredItemShapes() async throws {
        let answered = [
            #"{"id":"i0","n":1,"m":2}"#, #"{"n":1,"id":"i1","m":2}"#, #"{"n":1,"m":2,"id":"i2"}"#, #"{"id":"i3"}"#,
            #"{"n":{"id":"x"},"id":"i4"}"#, #"{"id":"i5","name":"other","n":1}"#, #"{"id":"i6","n":"\u00e9"}"#,
            #"{ "id": "i7", "n": 1 }"#, #"{"id":"i8","id":"again","n":[{"id":1}]}"#,
        ]
        let items = answered.indices.map { #"{"id":"i\#($0)","name":"Item \#($0)"}"# }
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? .json(#"{"result":["# + items.joined(separator: ",") + "]}")
                : .json(#"{"result":["# + answered.joined(separator: ",") + "]}")
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let text = try await harness.snapshot(Self.batched(max: 50)).get()
        let expected = try zip(items, answered).map { item, details in
            try #require(ListResource.merge(try JSON(parsing: Array(item.utf8)), details: try JSON(parsing: Array(details.utf8))))
        }
        #expect(text.utf8.elementsEqual(JSON.array(expected).serialized), "\(text)")
        await harness.stop()
        await upstream.shutdown()
    }

    /// List answers held until `count` list calls are in: the snapshots of a test that are to
    /// share a window get their lists together, however slowly a loaded machine sent each call,
    /// then ask their ids at once, and a window of ``sharedWindow`` takes them.
    static func listsIn(
        _ count: Int = 2, isList: @escaping @Sendable (String) -> Bool = { $0 == "/groups" }
    ) -> @Sendable ([RecordedRequest]) -> Bool {
        { records in records.filter { isList($0.path) }.count >= count }
    }
    static let sharedWindow = Duration.seconds(1)

    @Test("ids asked by concurrent snapshots within the window share one call: an id both ask is fetched once")
    func windowShared() async throws {
        let groups = TaskGroupsFixture(count: 9)
        let listsIn = Self.listsIn(isList: { $0.hasPrefix("/lists/") })
        let upstream = try await ScriptedUpstream.start { request in
            switch request.path {
            case "/lists/a": UpstreamReply.json(TaskGroupsFixture(groups: Array(groups.groups[0..<6])).listJSON).held(until: listsIn)
            case "/lists/b": UpstreamReply.json(TaskGroupsFixture(groups: Array(groups.groups[3..<9])).listJSON).held(until: listsIn)
            default: groups.reply(to: request) ?? .json("{}", status: 404)
            }
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let definition = Self.batched(max: 50, window: Self.sharedWindow, listPath: "/lists/{list}")
        let a = try await harness.start(definition, parameters: ParameterValues(["list": "a"]))
        let b = try await harness.start(definition, parameters: ParameterValues(["list": "b"]))
        let first = try await harness.outcome(of: a)
        let second = try await harness.outcome(of: b)
        #expect(try first.get() == TaskGroupsFixture(groups: Array(groups.groups[0..<6])).mergedJSON)
        #expect(try second.get() == TaskGroupsFixture(groups: Array(groups.groups[3..<9])).mergedJSON)
        let calls = Self.batchCalls(upstream)
        #expect(calls.count == 1, "\(calls.map(\.uri))")
        let asked = calls.first.map { TaskGroupsFixture.batchIDs(of: $0) } ?? []
        #expect(asked.count == 9 && Set(asked) == Set(groups.groups.map(\.id)), "each id once: \(asked)")
        #expect(try await harness.openWindows() == 0, "a window with nothing waiting or in flight is forgotten")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("within a window, max still bounds each call; the calls go out together when the window closes")
    func windowSplitsByMax() async throws {
        let fixture = TaskGroupsFixture(count: 7)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!.held(until: Self.listsIn()) : fixture.reply(to: request)!
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let definition = Self.batched(max: 3, window: Self.sharedWindow)
        let runs = [try await harness.start(definition), try await harness.start(definition)]
        for run in runs { #expect(try await harness.outcome(of: run).get() == fixture.mergedJSON) }
        let calls = Self.batchCalls(upstream)
        #expect(calls.map { TaskGroupsFixture.batchIDs(of: $0).count } == [3, 3, 1])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a snapshot that leaves withdraws its ids: the shared call goes on for the other, which gets its document")
    func oneLeaves() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        // The batch call is answered only once the leaving snapshot has left.
        let left = Observed(false)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!.held(until: Self.listsIn()) : fixture.reply(to: request)!.held(until: { _ in left.value })
        }
        // The held batch call waits for the test's steps, however long a busy machine takes
        // over them: a 5 s deadline that passed first failed the staying snapshot's items.
        let harness = try await BatchHarness(upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        let definition = Self.batched(window: Self.sharedWindow)
        let leaving = try await harness.start(definition)
        let staying = try await harness.start(definition)
        #expect(await upstream.records.wait(timeout: .seconds(10)) { records in records.contains { $0.path == "/groups/metadata" } })
        try await harness.cancel(leaving)
        left.update { $0 = true }
        try await upstream.releaseHeld()
        #expect(try await harness.outcome(of: staying).get() == fixture.mergedJSON)
        let calls = Self.batchCalls(upstream)
        #expect(calls.count == 1)
        #expect(calls.allSatisfy { !$0.closedByClient && !$0.inFlight })
        #expect(leaving.outcome.value == nil)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a call is cancelled only when no snapshot waits on it any more; ids withdrawn inside the window are never asked")
    func allLeave() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!.held(until: Self.listsIn()) : .hang
        }
        let harness = try await BatchHarness(upstream: upstream.baseURL, policy: .init(timeout: .seconds(60), retries: 0))
        let definition = Self.batched(window: Self.sharedWindow)
        let first = try await harness.start(definition)
        let second = try await harness.start(definition)
        #expect(await upstream.records.wait(timeout: .seconds(10)) { records in records.contains { $0.path == "/groups/metadata" } })
        try await harness.cancel(first)
        try await harness.cancel(second)
        #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
            records.filter { $0.path == "/groups/metadata" }.allSatisfy(\.closedByClient)
        })
        #expect(try await harness.openWindows() == 0)

        // Left inside a long window: its ids are withdrawn before any call.
        let early = try await harness.start(Self.batched(window: .seconds(30)))
        #expect(try await harness.waitForOpenWindows(1), "its ids wait in the window")
        try await harness.cancel(early)
        #expect(try await harness.openWindows() == 0)
        #expect(Self.batchCalls(upstream).count == 1)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("cached details are reused until cacheFor passes, then fetched again, batched or not")
    func cacheReusedAndExpired() async throws {
        let fixture = TaskGroupsFixture(count: 4)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let clock = ManualClock()
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        for (definition, calls) in [
            (Self.batched(cacheFor: .seconds(30)), Self.batchCalls),
            (ListResourceTests.definition(), Self.itemCalls),
        ] {
            let cache = DetailCache(maxAge: .seconds(30), budget: 1 << 20, clock: clock.read)
            let before = calls(upstream).count
            #expect(try await harness.snapshot(definition, cache: cache).get() == fixture.mergedJSON)
            let fetched = calls(upstream).count - before
            #expect(fetched == (definition.batch == nil ? 4 : 1))
            #expect(cache.keptCount == 4)
            clock.advance(by: .seconds(29))
            #expect(try await harness.snapshot(definition, cache: cache).get() == fixture.mergedJSON)
            #expect(calls(upstream).count - before == fetched, "within cacheFor: no detail call")
            clock.advance(by: .seconds(1))
            #expect(try await harness.snapshot(definition, cache: cache).get() == fixture.mergedJSON)
            #expect(calls(upstream).count - before == 2 * fetched, "cacheFor passed: fetched again")
        }
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 6, "the list is never cached")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("two identities never share a batch call or a cached detail, and each call carries its own caller's headers")
    func identitiesApart() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: $0.path == "/groups" ? .zero : .milliseconds(200))! }
        let harness = try await BatchHarness(upstream: upstream.baseURL)
        let cache = DetailCache(maxAge: .seconds(60), budget: 1 << 20)
        let definition = Self.batched(window: .milliseconds(300), cacheFor: .seconds(60))
        let alice = Caller(identity: Identity(digest: "a11ce"), forwardedHeaders: [("Authorization", "Bearer alice")])
        let bob = Caller(identity: Identity(digest: "b0b"), forwardedHeaders: [("Authorization", "Bearer bob")])
        let runs = [
            try await harness.start(definition, caller: alice, cache: cache), try await harness.start(definition, caller: bob, cache: cache),
        ]
        for run in runs { #expect(try await harness.outcome(of: run).get() == fixture.mergedJSON) }
        var calls = Self.batchCalls(upstream)
        #expect(calls.count == 2)
        #expect(Set(calls.compactMap { $0.header("Authorization") }) == ["Bearer alice", "Bearer bob"])
        #expect(calls.allSatisfy { TaskGroupsFixture.batchIDs(of: $0) == fixture.groups.map(\.id) })

        // Alice's details are cached for alice only: carol's first snapshot calls.
        #expect(try await harness.snapshot(definition, caller: alice, cache: cache).get() == fixture.mergedJSON)
        #expect(Self.batchCalls(upstream).count == 2)
        let carol = Caller(identity: Identity(digest: "ca501"), forwardedHeaders: [("Authorization", "Bearer carol")])
        #expect(try await harness.snapshot(definition, caller: carol, cache: cache).get() == fixture.mergedJSON)
        calls = Self.batchCalls(upstream)
        #expect(calls.count == 3)
        #expect(calls.last?.header("Authorization") == "Bearer carol")
        await harness.stop()
        await upstream.shutdown()
    }
}

/// A clock turned by hand: what a ``DetailCache`` reads as now.
final class ManualClock: Sendable {
    private let now = Mutex(ContinuousClock.now)

    var read: @Sendable () -> ContinuousClock.Instant { { [self] in now.withLock { $0 } } }

    func advance(by duration: Duration) {
        now.withLock { $0 += duration }
    }
}

/// Snapshots of `groups` resources on a loop thread of their own, all with one worker's batch
/// windows, each with the caller, parameter values and detail cache it is started with.
final class BatchHarness: Sendable {
    typealias Outcome = Result<String, ResourceError>

    /// A snapshot started: its outcome (the document as JSON text) lands in `outcome`.
    struct Run: Sendable {
        let outcome: Observed<Outcome?>
        let subscription: LoopBound<AnyCancellable>
    }

    let thread: LoopThread
    private let parts: LoopBound<(client: UpstreamClient, upstream: Upstream, windows: BatchWindows)>

    init(upstream url: String, policy: Upstream.Policy = .init(timeout: .seconds(5), retries: 0)) async throws {
        thread = try LoopThread()
        let base = try BaseURL(url)
        parts = try await thread.run { loop in
            let client = UpstreamClient(loop: loop)
            return LoopBound((client, Upstream(name: "tasks", base: base, policy: policy, client: client), BatchWindows()), loop: loop)
        }
    }

    func start(
        _ definition: ListResource.Definition, caller: Caller = .anonymous, parameters: ParameterValues = .none, cache: DetailCache? = nil
    ) async throws -> Run {
        let parts = self.parts
        let outcome = Observed<Outcome?>(nil)
        let subscription = try await thread.run { loop in
            let sharing = DetailSharing(resource: "groups", definition: definition, windows: parts.value.windows, cache: cache)
            let resource = ListResource(
                name: "groups", upstream: parts.value.upstream, definition: definition, parameters: parameters, caller: caller, sharing: sharing)
            let cancellable = resource.snapshot(trace: TraceContext()).sink(
                receiveCompletion: { completion in
                    if case .failure(let error) = completion { outcome.update { $0 = .failure(error) } }
                },
                receiveValue: { document in outcome.update { $0 = .success(String(decoding: document.serialized, as: UTF8.self)) } })
            return LoopBound(cancellable, loop: loop)
        }
        return Run(outcome: outcome, subscription: subscription)
    }

    /// The outcome of `run`, once it came (within 10 s).
    func outcome(of run: Run) async throws -> Outcome {
        _ = await run.outcome.wait(timeout: .seconds(10)) { $0 != nil }
        try await thread.run { _ in run.subscription.release() }
        return try #require(run.outcome.value)
    }

    /// One whole snapshot.
    func snapshot(
        _ definition: ListResource.Definition, caller: Caller = .anonymous, parameters: ParameterValues = .none, cache: DetailCache? = nil
    ) async throws -> Outcome {
        try await outcome(of: try await start(definition, caller: caller, parameters: parameters, cache: cache))
    }

    func cancel(_ run: Run) async throws {
        try await thread.run { _ in
            run.subscription.value.cancel()
            run.subscription.release()
        }
    }

    /// The windows open now (contexts with ids waiting or in flight).
    func openWindows() async throws -> Int {
        let parts = self.parts
        return try await thread.run { _ in parts.value.windows.openCount }
    }

    /// Whether `count` windows are open within 10 s: the state of the worker's loop, read
    /// every few milliseconds (nothing signals it).
    func waitForOpenWindows(_ count: Int) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await openWindows() == count { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    func stop() async {
        let parts = self.parts
        await thread.stop { parts.release() }
    }
}
