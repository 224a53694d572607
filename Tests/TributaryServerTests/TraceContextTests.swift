import HTTPCore
import Testing
import TributaryTesting
import TestThreads

@Suite("Trace context: a request's traceparent (or a new one) on every upstream call it causes, its trace id in the log")
struct TraceContextTests {
    static let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
    static let incomingTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

    /// One upstream serving the groups, the topics and their medias; its first `/groups`
    /// call answers 503 when `failFirstList` (a retry follows).
    struct World {
        let groups = TaskGroupsFixture(count: 3)
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(failFirstList: Bool = false) async throws -> World {
            let groups = TaskGroupsFixture(count: 3)
            let media = MediaFixture(topics: ["a", "b"])
            let listCalls = Observed(0)
            let upstream = try await ScriptedUpstream.start { request in
                if request.path == "/groups" {
                    var call = 0
                    listCalls.update { count in
                        count += 1
                        call = count
                    }
                    if failFirstList && call == 1 { return .json("{}", status: 503) }
                }
                return groups.reply(to: request) ?? media.reply(to: request) ?? .json("{}", status: 404)
            }
            let service = try await ServiceHarness(yaml: """
                upstreams:
                  tasks: {url: "\(upstream.baseURL)", retries: 1, backoff: 10ms}
                  media: {url: "\(upstream.baseURL)", retries: 0}
                  search: {url: "\(upstream.baseURL)", retries: 0}
                resources:
                  groups:
                    kind: list
                    upstream: tasks
                    list: {path: /groups, items: result, id: id}
                    details: {path: "/groups/{id}/metadata", value: result}
                    refreshInterval: 1h
                \(ServiceHarness.viewModelResourcesYAML())
                """)
            return World(upstream: upstream, service: service)
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    /// The parts of a `traceparent` header: version, trace id, span id, flags.
    static func parts(_ record: RecordedRequest) -> [String] {
        (record.header("traceparent") ?? "").split(separator: "-").map(String.init)
    }

    @Test("a valid traceparent: every call (list, details, retry, pages) carries its trace id and flags, a new span id each, and tracestate unchanged")
    func propagated() async throws {
        let world = try await World.start(failFirstList: true)
        let headers = [("traceparent", Self.incoming), ("tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")]
        #expect(try await world.service.get("/groups", headers: headers).text == world.groups.mergedJSON)
        #expect(try await world.service.get("/rows", headers: headers).status == 200)

        let calls = world.upstream.requests
        // A failed list call and its retry, 3 details; the topics, 2 first pages.
        #expect(calls.count == 8)
        for call in calls {
            let parts = Self.parts(call)
            #expect(parts.count == 4, "\(call.path): \(call.header("traceparent") ?? "none")")
            guard parts.count == 4 else { continue }
            #expect(parts[0] == "00")
            #expect(parts[1] == Self.incomingTraceID, "\(call.path)")
            #expect(parts[2].count == 16 && parts[2] != "00f067aa0ba902b7" && parts[2] != String(repeating: "0", count: 16))
            #expect(parts[3] == "00", "the request's flags")
            #expect(call.header("tracestate") == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
        }
        let spans = calls.map { Self.parts($0).dropFirst(2).first ?? "" }
        #expect(Set(spans).count == calls.count, "a span id of its own for every call, the retry included")
        await world.stop()
    }

    @Test("no traceparent, or an invalid one: a new trace id per request, shared by all its calls, without tracestate")
    func generated() async throws {
        let world = try await World.start()
        let invalid = [
            nil,
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // trace id all zeros
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // parent id all zeros
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // another version
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",  // short flags
            "garbage",
        ]
        var traceIDs: Set<String> = []
        for header in invalid {
            let before = world.upstream.requests.count
            let headers = header.map { [("traceparent", $0), ("tracestate", "congo=t61")] } ?? []
            #expect(try await world.service.get("/groups", headers: headers).status == 200)
            let calls = world.upstream.requests.dropFirst(before)
            #expect(calls.count == 4)
            let ids = Set(calls.map { Self.parts($0).dropFirst().first ?? "" })
            #expect(ids.count == 1, "one trace for the request's calls: \(ids)")
            guard let id = ids.first else { continue }
            #expect(id.count == 32 && id.allSatisfy { $0.isHexDigit && !$0.isUppercase } && id != String(repeating: "0", count: 32))
            #expect(id != Self.incomingTraceID.uppercased() && id != Self.incomingTraceID, "\(header ?? "none") replaced")
            #expect(calls.allSatisfy { $0.header("tracestate") == nil }, "no tracestate without a valid traceparent")
            traceIDs.insert(id)
        }
        #expect(traceIDs.count == invalid.count, "a new trace per request")
        await world.stop()
    }

    @Test("a stream's own pipeline (rows, loadMore) keeps the opening request's trace; each refresh of a shared one is a trace of its own")
    func streams() async throws {
        let world = try await World.start()
        let rows = try await world.service.events("/rows", headers: [("traceparent", Self.incoming)])
        let id = try await rows.announcedID()
        _ = try await rows.next(type: "snapshot")
        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(id)/triggers/loadMore?topic=b").status == 202)
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.query["page"] != nil } })
        let pages = world.upstream.requests.filter { $0.path.hasPrefix("/topics") }
        #expect(pages.count == 4, "the topics, two first pages, b's second page")
        #expect(pages.allSatisfy { Self.parts($0).dropFirst().first == Self.incomingTraceID })
        rows.close()

        let before = world.upstream.requests.count
        let groups = try await world.service.events("/groups", headers: [("traceparent", Self.incoming)])
        _ = try await groups.next(type: "snapshot")
        #expect(try await world.service.post("/groups/reload").status == 202)
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.count == before + 8 })
        let refreshes = world.upstream.requests.dropFirst(before).map { Self.parts($0).dropFirst().first ?? "" }
        #expect(!refreshes.contains(Self.incomingTraceID), "the shared pipeline is no one request's")
        #expect(Set(refreshes.prefix(4)).count == 1 && Set(refreshes.suffix(4)).count == 1)
        #expect(refreshes.first != refreshes.last, "each refresh a trace of its own")
        groups.close()
        await world.stop()
    }

    @Test("a traceparent's trace id and flags come back digit for digit, leading zeros and high flag bits kept", arguments: [
        ("00000000000000000000000000000001", "a5"),
        ("f0000000000000000000000000000000", "00"),
        ("0123456789abcdef0fedcba987654321", "ff"),
    ])
    func traceIDAndFlagsRoundTrip(traceID: String, flags: String) {
        let trace = TraceContext(traceparent: "00-\(traceID)-00f067aa0ba902b7-\(flags)", tracestate: nil)
        #expect(trace.traceID == traceID)
        #expect(trace.flags == flags)
        let parent = trace.upstreamHeaders()[0].1
        #expect(parent.hasPrefix("00-\(traceID)-") && parent.hasSuffix("-\(flags)") && parent.utf8.count == 55)
    }

    @Test("a context's span id, the service's own span, is new with each context: never the caller's parent id, never all zeros")
    func spanIDs() {
        let received = (0..<100).map { _ in TraceContext(traceparent: Self.incoming, tracestate: nil) }
        let new = (0..<100).map { _ in TraceContext() }
        let ids = (received + new).map(\.spanID)
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.utf8.count == 16 && $0.allSatisfy { $0.isHexDigit && !$0.isUppercase } && $0 != String(repeating: "0", count: 16) })
        #expect(!ids.contains("00f067aa0ba902b7"))
        #expect(received.allSatisfy { $0.traceID == Self.incomingTraceID })
    }

    @Test("new trace ids (no system random number per trace) are valid and never repeat, across threads", .ownThread)
    func newTraceIDsAreUnique() async {
        // Small enough not to hold the cooperative pool, which the other suites' awaits share.
        let perTask = 5_000
        let ids = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<perTask).map { _ in TraceContext().traceID } }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        #expect(Set(ids).count == 4 * perTask)
        #expect(ids.allSatisfy { $0.utf8.count == 32 && $0.allSatisfy { $0.isHexDigit && !$0.isUppercase } })
        // Both halves vary: a trace id is two mixed values, not a counter in its low half.
        #expect(Set(ids.map { $0.prefix(16) }).count == 4 * perTask)
        #expect(Set(ids.map { $0.suffix(16) }).count == 4 * perTask)
    }

    @Test("the access log line of a request holds the trace id its upstream calls carry, and a span id of its own")
    func accessLog() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: ProcessTests.yaml(upstream: upstream.baseURL))
        #expect(try await TestHTTP.get(port: service.port, "/groups").status == 200)
        let ids = Set(upstream.requests.map { Self.parts($0).dropFirst().first ?? "" })
        #expect(ids.count == 1 && upstream.requests.count == 3)
        let id = try #require(ids.first)
        #expect(await service.output.wait(timeout: .seconds(5)) { output in
            output.split(separator: "\n").contains { $0.contains("GET /groups 200") && $0.contains("trace_id=\(id)") }
        }, "\(service.output.value)")

        #expect(try await TestHTTP.get(port: service.port, "/healthz", headers: [("traceparent", Self.incoming)]).status == 200)
        #expect(await service.output.wait(timeout: .seconds(5)) { output in
            output.split(separator: "\n").contains { $0.contains("GET /healthz 200") && $0.contains("trace_id=\(Self.incomingTraceID)") }
        })
        #expect(service.output.value.split(separator: "\n").contains { $0.contains("GET /healthz 200") && $0.contains(/span_id=[0-9a-f]{16}\s/) })
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }
}
