import Aggregation
import EventLoop
import Foundation
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

/// Batched details through a real worker (DESIGN, part 3, "Batched details"): the answers of
/// a batched resource are its unbatched twin's, byte for byte (JSON, ETag, SSE); requests
/// share batch calls within a window, never across identities; a client that leaves takes
/// its ids back; details are cached per identity; the counters say what happened.
@Suite("Batched details through a worker: same answers, fewer calls")
struct BatchedGroupsTests {
    /// `groups` (a call per item) and `name` (the same items in batch calls, `batch` and
    /// `more` added to its `details`) over one upstream; `resource` YAML added to both. Each
    /// test names its batched resource on its own: the counters are the process's, and the
    /// tests run at once.
    static func yaml(
        upstream: String, name: String = "batched",
        batch: String = "{path: /groups/metadata, parameter: ids, style: comma, max: 10, items: result, id: id}",
        details more: String = "", resource: String = "", forward: Bool = false
    ) -> String {
        """
        upstreams:
          tasks:
            url: \(upstream)
            timeout: 10s
            retries: 0
            \(forward ? "forward: [Authorization]" : "")
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: 1h
            \(resource)
          \(name):
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details:
              batch: \(batch)
              \(more)
            refreshInterval: 1h
            \(resource)
        """
    }

    static func batchCalls(_ upstream: ScriptedUpstream) -> [RecordedRequest] {
        upstream.requests.filter { $0.path == "/groups/metadata" }
    }

    /// `count` connections, each with `GET path` sent (with `headers`), not yet read.
    /// List answers held until `count` list calls are in: the requests of a test that are to
    /// share a window get their lists together, however slowly a loaded machine sent each one.
    static func listsIn(_ count: Int) -> @Sendable ([RecordedRequest]) -> Bool {
        { records in records.filter { $0.path == "/groups" }.count >= count }
    }

    static func send(_ count: Int, to port: UInt16, _ path: String = "/batched", headers: [(String, String)] = []) async throws -> [TestConnection] {
        var clients: [TestConnection] = []
        for _ in 0..<count { clients.append(try await TestConnection(port: port)) }
        for client in clients { try await client.sendRequest("GET", path, headers: headers) }
        return clients
    }

    /// The value of the counter or gauge `line` (name and labels) in `metrics`, if present.
    static func value(of line: String, in metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(line + " ") }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
    }

    @Test("JSON, ETag and SSE snapshot of a batched resource are its unbatched twin's, byte for byte, from 3 calls for 25 items")
    func sameAnswers() async throws {
        let fixture = TaskGroupsFixture(count: 25)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL, name: "sameanswers"))
        let plain = try await service.get("/groups")
        let batched = try await service.get("/sameanswers")
        #expect(batched.status == 200)
        #expect(batched.body == plain.body)
        #expect(batched.text == fixture.mergedJSON)
        #expect(batched.header("ETag") == plain.header("ETag"))
        #expect(Self.batchCalls(upstream).count == 3)
        #expect(try await service.get("/sameanswers", headers: [("If-None-Match", plain.header("ETag")!)]).status == 304)

        let plainStream = try await service.events("/groups")
        let batchedStream = try await service.events("/sameanswers")
        let plainSnapshot = try await plainStream.next(type: "snapshot")
        let batchedSnapshot = try await batchedStream.next(type: "snapshot")
        #expect(batchedSnapshot.data == plainSnapshot.data)
        #expect(batchedSnapshot.id == plainSnapshot.id)
        #expect(batchedSnapshot.id.map { "\"\($0)\"" } == plain.header("ETag"))
        plainStream.close()
        batchedStream.close()

        let metrics = try await service.get("/metrics").text
        #expect(Self.value(of: #"tributary_detail_batches_total{resource="sameanswers"}"#, in: metrics) == 9, "JSON, 304, stream")
        #expect(Self.batchCalls(upstream).count == 9)
        #expect(!metrics.contains(#"tributary_detail_cache_hits_total{resource="sameanswers"}"#), "no cache, no counter")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("with batchWindow and coalescing off, 10 concurrent requests share one batch call, each making its own list call")
    func windowShared() async throws {
        let fixture = TaskGroupsFixture(count: 8)
        // The list answers go out together: every request's ids reach the window at once.
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!.held(until: Self.listsIn(10)) : fixture.reply(to: request)!
        }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL, details: "batchWindow: 1s", resource: "coalesce: false"))
        let clients = try await Self.send(10, to: service.port)
        for client in clients { #expect(try await client.readResponse().text == fixture.mergedJSON) }
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 10)
        #expect(Self.batchCalls(upstream).count == 1)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("a live stream's refresh and a JSON request of the same resource share a window's call")
    func streamAndRequestShare() async throws {
        let fixture = TaskGroupsFixture(count: 6)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/groups" ? fixture.reply(to: request)!.held(until: Self.listsIn(2)) : fixture.reply(to: request)!
        }
        let service = try await ServiceHarness(yaml: Self.yaml(
            upstream: upstream.baseURL, name: "livebatched", details: "batchWindow: 1s", resource: "coalesce: false"))
        let stream = try await service.events("/livebatched")
        let request = try await Self.send(1, to: service.port, "/livebatched")[0]
        #expect(try await request.readResponse().text == fixture.mergedJSON)
        #expect(try await stream.next(type: "snapshot").data == fixture.mergedJSON)
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 2)
        #expect(Self.batchCalls(upstream).count == 1)
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    @Test("a client that leaves mid-batch withdraws its ids: the call goes on for the other; when the last leaves, it is cancelled")
    func clientsLeave() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let hangs = Observed(false)
        // The list answers of each pair of clients go out together, into one window.
        let listsSoFar = Observed(2)
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/groups" { return fixture.reply(to: request)!.held(until: Self.listsIn(listsSoFar.value)) }
            return hangs.value ? .hang : fixture.reply(to: request, delay: .seconds(1))!
        }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL, details: "batchWindow: 1s", resource: "coalesce: false"))
        let clients = try await Self.send(2, to: service.port)
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.contains { $0.path == "/groups/metadata" } })
        clients[0].close()
        let answer = try await clients[1].readResponse()
        #expect(answer.text == fixture.mergedJSON)
        #expect(Self.batchCalls(upstream).count == 1)
        #expect(Self.batchCalls(upstream).allSatisfy { !$0.closedByClient })

        hangs.update { $0 = true }
        listsSoFar.update { $0 = 4 }
        let leaving = try await Self.send(2, to: service.port)
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.filter { $0.path == "/groups/metadata" }.count == 2 })
        for client in leaving { client.close() }
        #expect(await upstream.records.wait(timeout: .seconds(10)) { records in
            records.filter { $0.path == "/groups/metadata" }.last?.closedByClient == true
        })
        #expect(Self.batchCalls(upstream).count == 2)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("the shipped example of details.batch, uncommented, against the demo upstream: one call, /groups as without it, byte for byte")
    func shippedExampleOverTheDemo() async throws {
        let thread = try LoopThread()
        let demo = try await thread.run { loop in
            let demo = try DemoUpstream(loop: loop)
            return (try demo.bind(ListenAddress(host: "127.0.0.1", port: 0)), LoopBound(demo, loop: loop))
        }
        let shipped = ShippedConfiguration.yaml.replacingOccurrences(of: "http://127.0.0.1:8081", with: "http://127.0.0.1:\(demo.0)")
        // Named on its own, so that its counter is its own.
        let example = shipped.replacingOccurrences(of: "      # batch: ", with: "      batch: ")
            .replacingOccurrences(of: "\n  groups:\n", with: "\n  shippedexample:\n")
        #expect(example != shipped)
        let plain = try await ServiceHarness(yaml: shipped)
        let batched = try await ServiceHarness(yaml: example)
        // The demo's groups change each on its own clock (group i every 3 + i seconds), so an
        // unbatched answer, whose detail calls go out one by one, may straddle a change: each
        // item of the batched answer is, byte for byte, that item in one of the two unbatched
        // answers around it (no item changes twice within a few seconds).
        let before = try await plain.get("/groups")
        let answer = try await batched.get("/shippedexample")
        let after = try await plain.get("/groups")
        #expect(answer.status == 200)
        let items = try #require(try JSON(parsing: answer.body).arrayValue)
        let beforeItems = try #require(try JSON(parsing: before.body).arrayValue)
        let afterItems = try #require(try JSON(parsing: after.body).arrayValue)
        #expect(items.count == beforeItems.count && items.count == afterItems.count)
        for (index, item) in items.enumerated() where index < beforeItems.count && index < afterItems.count {
            #expect(item.serialized == beforeItems[index].serialized || item.serialized == afterItems[index].serialized,
                    "item \(index): \(String(decoding: item.serialized, as: UTF8.self))")
        }
        #expect((try answer.json() as? [[String: Any]])?.count == 8)
        let metrics = try await batched.get("/metrics").text
        #expect(Self.value(of: #"tributary_detail_batches_total{resource="shippedexample"}"#, in: metrics) == 1)
        await plain.stop()
        await batched.stop()
        await thread.stop { demo.1.release() }
    }

    @Test("two identities never share a batch call or a cached detail; each call carries its caller's header")
    func identitiesApart() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0, delay: $0.path == "/groups" ? .zero : .milliseconds(200))! }
        let service = try await ServiceHarness(yaml: Self.yaml(
            upstream: upstream.baseURL, name: "private", details: "batchWindow: 300ms\n      cacheFor: 1m", resource: "coalesce: false",
            forward: true))
        let alice = try await Self.send(1, to: service.port, "/private", headers: [("Authorization", "Bearer alice")])
        let bob = try await Self.send(1, to: service.port, "/private", headers: [("Authorization", "Bearer bob")])
        for client in alice + bob {
            let answer = try await client.readResponse()
            #expect(answer.text == fixture.mergedJSON)
            #expect(answer.header("Cache-Control") == "private, no-cache")
        }
        var calls = Self.batchCalls(upstream)
        #expect(calls.count == 2)
        #expect(Set(calls.compactMap { $0.header("Authorization") }) == ["Bearer alice", "Bearer bob"])

        #expect(try await service.get("/private", headers: [("Authorization", "Bearer alice")]).text == fixture.mergedJSON)
        #expect(Self.batchCalls(upstream).count == 2, "alice's details come from the cache")
        #expect(try await service.get("/private", headers: [("Authorization", "Bearer carol")]).text == fixture.mergedJSON)
        calls = Self.batchCalls(upstream)
        #expect(calls.count == 3, "carol never reads alice's or bob's")
        #expect(calls.last?.header("Authorization") == "Bearer carol")

        let metrics = try await service.get("/metrics").text
        #expect(Self.value(of: #"tributary_detail_cache_hits_total{resource="private"}"#, in: metrics) == 3)
        #expect(!metrics.contains("Bearer"))
        await service.stop()
        await upstream.shutdown()
    }
}
