import Testing
import TributaryTesting

/// Identical JSON GETs in flight at once share one run of the pipeline (`coalesce`, on by
/// default): against a real worker and a slow scripted upstream that counts its calls.
@Suite("Coalescing of JSON answers")
struct CoalescingTests {
    /// The list call answers after this long: every request sent before it joins the run.
    static let slowList = Duration.seconds(2)

    /// `count` connections, each with `GET path` sent (with `headers`), not yet read.
    private static func send(_ count: Int, to port: UInt16, _ path: String = "/groups", method: String = "GET",
                             headers: [(String, String)] = []) async throws -> [TestConnection] {
        var clients: [TestConnection] = []
        for _ in 0..<count { clients.append(try await TestConnection(port: port)) }
        for client in clients { try await client.sendRequest(method, path, headers: headers) }
        return clients
    }

    @Test("50 simultaneous GET /groups cost one list call and one detail call per group, and get 50 identical answers")
    func fiftyShareOneRun() async throws {
        let fixture = TaskGroupsFixture(count: 8)
        let upstream = try await ScriptedUpstream.start { request in
            fixture.reply(to: request, delay: request.path == "/groups" ? Self.slowList : .zero)!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "10s"))
        let clients = try await Self.send(50, to: service.port)
        var answers: [TestResponse] = []
        for client in clients { answers.append(try await client.readResponse()) }
        #expect(answers.allSatisfy { $0.status == 200 && $0.text == fixture.mergedJSON })
        #expect(Set(answers.compactMap { $0.header("ETag") }).count == 1)
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 1)
        #expect(upstream.requests.filter { $0.path != "/groups" }.count == 8)
        // The run is forgotten once answered: the next request fetches again.
        #expect(try await service.get("/groups").status == 200)
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 2)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("pages and search resources coalesce too, a search per query: the same query shares, another does not")
    func pagesAndSearch() async throws {
        let media = MediaFixture(topics: ["a", "b"])
        let upstream = try await ScriptedUpstream.start { request in
            var reply = SearchFixture.reply(to: request) ?? media.reply(to: request) ?? .json("{}", status: 404)
            if request.path == "/topics" || request.path == "/search/repositories" { reply.delay = Self.slowList }
            return reply
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL))
        let rows = try await Self.send(5, to: service.port, "/rows")
        let swift = try await Self.send(5, to: service.port, "/search?q=swift")
        let vapor = try await Self.send(5, to: service.port, "/search?q=vapor")
        for client in rows { #expect(try await client.readResponse().text == media.rowsJSON()) }
        for client in swift { #expect(try await client.readResponse().text == SearchFixture.itemsJSON(for: "swift")) }
        for client in vapor { #expect(try await client.readResponse().text == SearchFixture.itemsJSON(for: "vapor")) }
        #expect(upstream.requests.filter { $0.path == "/topics" }.count == 1)
        #expect(upstream.requests.filter { $0.path.hasPrefix("/topics/") }.count == 2)
        #expect(upstream.requests.compactMap { $0.query["q"] }.sorted() == ["swift", "vapor"])
        await service.stop()
        await upstream.shutdown()
    }

    @Test("with coalesce: false, 50 simultaneous requests cost 50 list calls")
    func coalescingOff() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { request in
            fixture.reply(to: request, delay: request.path == "/groups" ? .milliseconds(200) : .zero)!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(
            upstream: upstream.baseURL, groups: "coalesce: false", timeout: "10s"))
        let clients = try await Self.send(50, to: service.port)
        for client in clients { #expect(try await client.readResponse().text == fixture.mergedJSON) }
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 50)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("each request of a run gets its own answer: gzip when it asks, 304 for its tag, no body for HEAD")
    func ownHeaders() async throws {
        let fixture = TaskGroupsFixture(count: 40)
        let upstream = try await ScriptedUpstream.start { request in
            fixture.reply(to: request, delay: request.path == "/groups" ? Self.slowList : .zero)!
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, timeout: "10s"))
        let tag = try await service.get("/groups").header("ETag")!
        let plain = try await Self.send(1, to: service.port)[0]
        let gzip = try await Self.send(1, to: service.port, headers: [("Accept-Encoding", "gzip")])[0]
        let conditional = try await Self.send(1, to: service.port, headers: [("If-None-Match", tag)])[0]
        let head = try await Self.send(1, to: service.port, method: "HEAD")[0]
        let plainAnswer = try await plain.readResponse()
        #expect(plainAnswer.status == 200)
        #expect(plainAnswer.text == fixture.mergedJSON)
        let gzipAnswer = try await gzip.readResponse()
        #expect(gzipAnswer.header("Content-Encoding") == "gzip")
        #expect(gzipAnswer.body.count < plainAnswer.body.count)
        #expect(try await conditional.readResponse().status == 304)
        let headAnswer = try await head.readResponse(method: "HEAD")
        #expect(headAnswer.status == 200)
        #expect(headAnswer.body.isEmpty)
        #expect(headAnswer.header("Content-Length") == String(plainAnswer.body.count))
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 2, "one for the tag, one for the four")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("a client that disconnects leaves the run: the others get their answer, and no upstream call is cancelled")
    func oneLeaves() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let upstream = try await ScriptedUpstream.start { request in
            // Slow enough for the service to see the disconnect first on a loaded machine.
            fixture.reply(to: request, delay: request.path == "/groups" ? Self.slowList * 3 : .zero)!
        }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL, resource: "coalescedleaving"))
        let clients = try await Self.send(3, to: service.port, "/coalescedleaving")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.contains { $0.path == "/groups" } })
        clients[0].close()
        #expect(try await Self.disconnected(from: service, route: "/coalescedleaving", count: 1))
        #expect(upstream.requests.first?.inFlight == true, "the client left while the run was in flight")
        for client in clients.dropFirst() {
            let answer = try await client.readResponse()
            #expect(answer.status == 200)
            #expect(answer.text == fixture.mergedJSON)
        }
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 1)
        #expect(upstream.requests.count == 6)
        #expect(upstream.requests.allSatisfy { !$0.closedByClient })
        await service.stop()
        await upstream.shutdown()
    }

    @Test("when every client of a run has disconnected, the run is cancelled with every upstream call in flight")
    func allLeave() async throws {
        let fixture = TaskGroupsFixture(count: 5)
        let upstream = try await ScriptedUpstream.start { request in request.path == "/groups" ? fixture.reply(to: request)! : .hang }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL, resource: "coalescedgone"))
        let clients = try await Self.send(3, to: service.port, "/coalescedgone")
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 5 })
        clients[0].close()
        clients[1].close()
        #expect(try await Self.disconnected(from: service, route: "/coalescedgone", count: 2))
        #expect(upstream.requests.filter(\.inFlight).count == 5, "two of three gone: the calls go on for the third")
        clients[2].close()
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.allSatisfy { !$0.inFlight } })
        #expect(upstream.requests.filter { $0.path != "/groups" }.allSatisfy { $0.closedByClient })
        #expect(upstream.requests.filter { $0.path == "/groups" }.count == 1)
        await service.stop()
        await upstream.shutdown()
    }

    /// A worker serving the groups of `upstream` as `resource` (a name of the test's own, for
    /// the process-wide request metrics).
    private static func yaml(upstream: String, resource: String) -> String {
        """
        upstreams:
          tasks: {url: "\(upstream)", timeout: 10s, retries: 0}
        resources:
          \(resource):
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
        """
    }

    /// Whether the worker has counted `count` requests of `route` whose client left first.
    private static func disconnected(from service: ServiceHarness, route: String, count: Int) async throws -> Bool {
        let line = #"tributary_http_requests_total{route="\#(route)",method="GET",status="disconnected"} \#(count)"#
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await service.get("/metrics").text.split(separator: "\n").contains(Substring(line)) { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
