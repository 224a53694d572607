import Aggregation
import Foundation
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("GET /events: one event stream carrying several resources")
struct EventsStreamTests {
    /// The names of the three resources in a test's configuration. Metrics are process-wide:
    /// a test that reads them gives its resources names of their own.
    struct Names: Sendable {
        var groups = "groups"
        var rows = "rows"
        var search = "search"

        static func prefixed(_ prefix: String) -> Names {
            Names(groups: prefix + "groups", rows: prefix + "rows", search: prefix + "search")
        }
    }

    /// One upstream serving the tasks, media and search APIs from data the test changes, and a
    /// worker serving groups, rows and search from it.
    struct World {
        let groups: Observed<TaskGroupsFixture>
        let media: Observed<MediaFixture>
        /// While true, group metadata never answers.
        let hangMetadata: Observed<Bool>
        /// While true, the group list answers 500.
        let failGroups: Observed<Bool>
        let upstream: ScriptedUpstream
        let service: ServiceHarness
        let names: Names

        static func start(
            names: Names = Names(), groups count: Int = 3, nameLength: Int = 0, heartbeat: String = "15s",
            maxSubscribers: Int = 10_000
        ) async throws -> World {
            var data = TaskGroupsFixture(count: count)
            if nameLength > 0 {
                for index in data.groups.indices { data.groups[index].name = String(repeating: "n", count: nameLength) + "\(index)" }
            }
            let groups = Observed(data)
            let media = Observed(MediaFixture(topics: ["a", "b"]))
            let hangMetadata = Observed(false)
            let failGroups = Observed(false)
            let upstream = try await ScriptedUpstream.start { request in
                if hangMetadata.value && request.path.hasSuffix("/metadata") { return .hang }
                if failGroups.value && request.path == "/groups" { return .json(#"{"down":true}"#, status: 500) }
                return groups.value.reply(to: request) ?? media.value.reply(to: request) ?? SearchFixture.reply(to: request)
                    ?? .json("{}", status: 404)
            }
            let service = try await ServiceHarness(
                yaml: yaml(upstream: upstream.baseURL, names: names, heartbeat: heartbeat, maxSubscribers: maxSubscribers))
            return World(
                groups: groups, media: media, hangMetadata: hangMetadata, failGroups: failGroups, upstream: upstream, service: service,
                names: names)
        }

        static func yaml(upstream: String, names: Names, heartbeat: String, maxSubscribers: Int = 10_000) -> String {
            """
            server:
              corsOrigins: [https://app.example]
            sse:
              heartbeat: \(heartbeat)
              retry: 1500ms
              maxSubscribers: \(maxSubscribers)
            upstreams:
              tasks: {url: "\(upstream)", timeout: 60s, retries: 0}
              media: {url: "\(upstream)", timeout: 60s, retries: 0}
              search: {url: "\(upstream)", timeout: 60s, retries: 0}
            resources:
              \(names.groups):
                kind: list
                upstream: tasks
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
                refreshInterval: 1h
              \(names.rows):
                kind: pages
                upstream: media
                list: {path: /topics, items: result, id: id}
                pages: {path: "/topics/{id}/medias", items: result, cursor: next, parameter: page}
                row: {item: topic, pages: medias}
              \(names.search):
                kind: search
                upstream: search
                path: /search/repositories
                parameter: q
                items: items
                minimumLength: 3
                debounce: 50ms
            """
        }

        func events(_ query: String, headers: [(String, String)] = [], receiveBuffer: Int? = nil) async throws -> SSEClient {
            try await service.events("/events?" + query, headers: headers, receiveBuffer: receiveBuffer)
        }

        /// Reloads the groups and waits until the refresh's upstream calls are all answered.
        func reloadGroupsAndWait() async throws {
            let before = upstream.requests.count
            let count = groups.value.groups.count
            #expect(try await service.post("/\(names.groups)/reload").status == 202)
            #expect(await upstream.records.wait(timeout: .seconds(5)) { records in
                records.count >= before + 1 + count && records.allSatisfy { !$0.inFlight }
            })
        }

        /// Waits until a new stream of groups and rows has had its documents fetched: the
        /// list and metadata of the groups, the topics and first page of each row, all answered.
        /// `before` is the count of upstream requests before the stream opened.
        /// `loadMore` of `topic` on stream `id`, asked again while the row's first page, which
        /// the upstream has answered, is still on its way into the view (the trigger is refused
        /// until then: 409, "has not loaded its first page yet"); for at most 10 s.
        func loadMore(_ id: String, topic: String) async throws -> TestResponse {
            var answer = try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/loadMore?topic=\(topic)")
            let deadline = ContinuousClock.now + .seconds(10)
            while answer.status == 409 && answer.text.contains("not loaded its first page yet") && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
                answer = try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/loadMore?topic=\(topic)")
            }
            return answer
        }

        func fetchedAgain(since before: Int) async -> Bool {
            let calls = 1 + groups.value.groups.count + 1 + media.value.topics.count
            return await upstream.records.wait(timeout: .seconds(5)) { records in
                records.count >= before + calls && records.allSatisfy { !$0.inFlight }
            }
        }

        /// The value of gauge `name` for `resource` in `/metrics` (nil: never set).
        func gauge(_ name: String, _ resource: String) async throws -> Double? {
            let key = name + #"{resource=""# + resource + #""} "#
            let text = try await service.get("/metrics").text
            return text.split(separator: "\n").first { $0.hasPrefix(key) }.flatMap { Double($0.dropFirst(key.count)) }
        }

        /// Whether no stream of any of the three resources is live and no pipeline runs.
        func nothingSubscribed() async throws -> Bool {
            for resource in [names.groups, names.rows, names.search] {
                for gauge in ["tributary_sse_subscribers", "tributary_live_pipelines"] where try await self.gauge(gauge, resource) ?? 0 != 0 {
                    return false
                }
            }
            return true
        }

        /// Waits (≤ 5 s) until the service has let go of every stream and pipeline, after a
        /// client closed its stream: only `/metrics` tells, so this asks every 50 ms. A stream
        /// opened before then joins the pipeline still running and gets its latest snapshot at
        /// once, with no new fetch.
        func untilNothingSubscribed() async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                if try await nothingSubscribed() { return true }
                try await Task.sleep(for: .milliseconds(50))
            }
            return false
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    /// An `event: stream` of a multiplexed stream.
    struct Announcement: Equatable {
        var id: String
        var resource: String
        var triggers: [String]
        var inputs: [String]

        init(_ event: ServerSentEvent) throws {
            #expect(event.type == "stream")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
            #expect(Set(object.keys) == ["id", "resource", "triggers", "inputs"])
            id = try #require(object["id"] as? String)
            resource = try #require(object["resource"] as? String)
            triggers = try #require(object["triggers"] as? [String])
            inputs = try #require(object["inputs"] as? [String])
        }

        init(id: String = "", resource: String, triggers: [String], inputs: [String]) {
            self.id = id
            self.resource = resource
            self.triggers = triggers
            self.inputs = inputs
        }
    }

    /// An `event: snapshot` of a multiplexed stream: `{"resource":"<name>","data":<document>}`
    /// (`{"resource":"<name>","inputs":{…},"data":<document>}` for a view with inputs), the
    /// document as the text it was sent as, and the composite id.
    struct TaggedSnapshot {
        var resource: String
        /// The input values the document answers (empty: the event names none).
        var inputs: [String: String]
        var document: String
        var versions: [(resource: String, version: String)]

        init(_ event: ServerSentEvent) throws {
            #expect(event.type == "snapshot")
            // `,"data":` cannot occur inside a JSON string (its quotes are escaped): the first
            // is the one before the document.
            let separator = #","data":"#
            guard event.data.hasPrefix(#"{"resource":""#), event.data.hasSuffix("}"), let middle = event.data.firstRange(of: separator),
                  let head = try? JSONSerialization.jsonObject(with: Data((event.data[..<middle.lowerBound] + "}").utf8)) as? [String: Any],
                  let resource = head["resource"] as? String
            else {
                throw TestClientError.malformed(event.data)
            }
            #expect(Set(head.keys).isSubset(of: ["resource", "inputs"]))
            self.resource = resource
            inputs = head["inputs"] as? [String: String] ?? [:]
            document = String(event.data[middle.upperBound..<event.data.index(before: event.data.endIndex)])
            #expect((try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) != nil, "the data is one JSON document")
            let id = try #require(event.id)
            versions = id.split(separator: ",").map { entry in
                let parts = entry.split(separator: ":")
                return (String(parts.first ?? ""), parts.count == 2 ? String(parts[1]) : "")
            }
        }

        func version(of resource: String) -> String? {
            versions.first { $0.resource == resource }?.version
        }
    }

    /// Reads `count` stream events.
    static func announcements(_ stream: SSEClient, _ count: Int) async throws -> [Announcement] {
        var announcements: [Announcement] = []
        for _ in 0..<count { announcements.append(try Announcement(try await stream.next())) }
        return announcements
    }

    // MARK: - Refused before any event

    @Test("bad requests get a JSON 400, 404 or 406 before any event, and leave nothing subscribed")
    func refusals() async throws {
        let world = try await World.start(names: .prefixed("refused"))
        let (groups, rows, search) = (world.names.groups, world.names.rows, world.names.search)
        let longQuery = String(repeating: "q", count: SearchView.maximumQueryLength + 1)
        let seventeen = (0..<17).map { _ in "resource=\(groups)" }.joined(separator: "&")
        let cases: [(query: String, accept: String, status: Int, code: String, says: String)] = [
            ("", "text/event-stream", 400, "bad_request", "at least one resource"),
            ("\(search).q=swift", "text/event-stream", 400, "bad_request", "at least one resource"),
            ("resource=nope", "text/event-stream", 404, "unknown_resource", "nope"),
            ("resource=\(groups)&resource=nope", "text/event-stream", 404, "unknown_resource", "nope"),
            ("resource=\(groups)&resource=\(rows)&resource=\(groups)", "text/event-stream", 400, "bad_request", "more than once"),
            (seventeen, "text/event-stream", 400, "bad_request", "at most 16"),
            ("resource=\(groups)&\(search).q=swift", "text/event-stream", 400, "bad_request", "does not carry"),
            ("resource=\(groups)&q=swift", "text/event-stream", 400, "bad_request", "names no resource"),
            ("resource=\(groups)&\(groups).=1", "text/event-stream", 400, "bad_request", "no name"),
            ("resource=\(groups)&resource=\(search)&\(search).q=\(longQuery)", "text/event-stream", 400, "bad_request", "longer than"),
            ("resource=\(groups)", "application/json", 406, "not_acceptable", "text/event-stream"),
        ]
        for (query, accept, status, code, says) in cases {
            let response = try await world.service.get("/events?" + query, headers: [("Accept", accept)])
            #expect(response.status == status, "\(query)")
            #expect(response.header("Content-Type") == "application/json", "\(query)")
            #expect(response.error?.code == code, "\(query): \(response.text)")
            #expect(response.error?.message.contains(says) == true, "\(query): \(response.text)")
        }
        // The single-resource route refuses that query with the same status and code.
        let single = try await world.service.get("/\(search)?q=\(longQuery)", headers: [("Accept", "text/event-stream")])
        #expect(single.status == 400)
        #expect(single.error?.code == "bad_request")

        #expect(world.upstream.requests.isEmpty, "no pipeline started: \(world.upstream.requests.map(\.uri))")
        #expect(try await world.nothingSubscribed())
        // The same gauges do count a stream that opens.
        let stream = try await world.events("resource=\(groups)&resource=\(rows)")
        _ = try await stream.next(type: "snapshot")
        #expect(try await world.gauge("tributary_sse_subscribers", groups) == 1)
        #expect(try await world.gauge("tributary_sse_subscribers", rows) == 1)
        stream.close()
        // A request on a fresh connection is answered after the server saw this one close.
        #expect(try await world.nothingSubscribed())
        await world.stop()
    }

    @Test("no resource may be named events: /events is the multiplexed stream")
    func eventsIsReserved() throws {
        let yaml = World.yaml(upstream: "http://127.0.0.1:9", names: Names(groups: "events"), heartbeat: "15s")
        do {
            _ = try Configuration.load(yaml: yaml, file: "t.yaml")
            Issue.record("a resource named events was accepted")
        } catch {
            #expect(error.description.contains("the name events is reserved"))
        }
    }

    @Test("each resource of a stream counts against sse.maxSubscribers: one that would pass it is 503, nothing subscribed")
    func subscriberLimit() async throws {
        let world = try await World.start(maxSubscribers: 3)
        let stream = try await world.events("resource=groups&resource=rows")
        _ = try await Self.announcements(stream, 2)
        let refused = try await world.service.get("/events?resource=groups&resource=search", headers: [("Accept", "text/event-stream")])
        #expect(refused.status == 503)
        #expect(refused.error?.code == "too_many_subscribers")
        #expect(refused.header("Retry-After") == "5")
        let third = try await world.events("resource=search")
        #expect(try await Self.announcements(third, 1)[0].resource == "search", "one more fits")
        third.close()
        stream.close()
        await world.stop()
    }

    @Test("Accept: none, */* and text/* get the stream; HEAD gets its headers and no body")
    func acceptAndHead() async throws {
        let world = try await World.start()
        for accept in [nil, "*/*", "text/*", "application/json;q=0.9, text/event-stream;q=0.1"] {
            let connection = try await TestConnection(port: world.service.port)
            try await connection.sendRequest("GET", "/events?resource=groups", headers: accept.map { [("Accept", $0)] } ?? [])
            let head = try await connection.readHead()
            #expect(head.status == 200, "Accept: \(accept ?? "none")")
            #expect(head.header("Content-Type") == "text/event-stream")
            connection.close()
        }
        let refused = try await world.service.get("/events?resource=groups", headers: [("Accept", "text/event-stream;q=0, application/json")])
        #expect(refused.status == 406)
        let head = try await TestHTTP.request(port: world.service.port, "HEAD", "/events?resource=groups&resource=rows")
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "text/event-stream")
        #expect(head.body.isEmpty)
        await world.stop()
    }

    // MARK: - The stream

    @Test("retry, one stream event per resource in request order, then snapshots tagged with their resource and composite ids")
    func eventsInOrder() async throws {
        let world = try await World.start()
        let stream = try await world.events(
            "resource=search&resource=groups&resource=rows&search.q=swift", headers: [("Origin", "https://app.example")])
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Content-Type") == "text/event-stream")
        #expect(stream.head.header("Cache-Control") == "no-cache")
        #expect(stream.head.header("X-Accel-Buffering") == "no")
        #expect(stream.head.header("Access-Control-Allow-Origin") == "https://app.example")

        let announced = try await Self.announcements(stream, 3)
        #expect(stream.parser.retry == 1500)
        #expect(stream.parser.log.prefix(4) == ["retry", "event", "event", "event"])
        #expect(announced.map { Announcement(resource: $0.resource, triggers: $0.triggers, inputs: $0.inputs) } == [
            Announcement(resource: "search", triggers: [], inputs: ["q"]),
            Announcement(resource: "groups", triggers: ["reload"], inputs: []),
            Announcement(resource: "rows", triggers: ["reload", "loadMore"], inputs: []),
        ])
        #expect(announced.allSatisfy { StreamID($0.id) != nil })
        #expect(Set(announced.map(\.id)).count == 3, "each resource has an id of its own")

        let expected = [
            "search": SearchFixture.itemsJSON(for: "swift"), "groups": world.groups.value.mergedJSON, "rows": world.media.value.rowsJSON(),
        ]
        var snapshots: [String: TaggedSnapshot] = [:]
        var sent: [String] = []
        while snapshots.count < 3 {
            let snapshot = try TaggedSnapshot(try await stream.next())
            #expect(snapshots[snapshot.resource] == nil, "one snapshot of \(snapshot.resource)")
            #expect(snapshot.document == expected[snapshot.resource])
            sent.append(snapshot.resource)
            snapshots[snapshot.resource] = snapshot
            // The id lists the version of every document sent so far, in request order.
            #expect(snapshot.versions.map(\.resource) == ["search", "groups", "rows"].filter(sent.contains))
            #expect(snapshot.versions.allSatisfy { $0.version.count == 16 })
        }
        let last = try #require(snapshots[sent.last!])
        for resource in ["search", "groups", "rows"] {
            #expect(last.version(of: resource) == snapshots[resource]?.version(of: resource))
        }
        // The versions are the single streams' versions of the same documents.
        let single = try await world.service.events("/groups")
        #expect(try await single.next(type: "snapshot").id == last.version(of: "groups"))
        single.close()
        stream.close()
        await world.stop()
    }

    @Test("clients with the same versions get the same events (formatted once, sent whole from the second client on)")
    func sameEventsForEveryone() async throws {
        let world = try await World.start()
        var streams: [SSEClient] = []
        for _ in 0..<3 {
            let stream = try await world.events("resource=groups&resource=rows")
            _ = try await Self.announcements(stream, 2)
            for _ in 0..<2 { _ = try await stream.next(type: "snapshot") }
            streams.append(stream)
        }
        world.groups.update { $0.groups[1].taskCount = 99 }
        try await world.reloadGroupsAndWait()
        var events: [ServerSentEvent] = []
        for stream in streams { events.append(try await stream.next()) }
        let first = try TaggedSnapshot(events[0])
        #expect(first.resource == "groups")
        #expect(first.document == world.groups.value.mergedJSON)
        #expect(first.versions.map(\.resource) == ["groups", "rows"])
        #expect(events.allSatisfy { $0 == events[0] })
        for stream in streams { stream.close() }
        await world.stop()
    }

    @Test("a reconnect with Last-Event-ID gets only the documents that changed; the id keeps the others' versions")
    func lastEventIDSkipsUnchanged() async throws {
        // Its own resource names: /metrics is the process's, and untilNothingSubscribed reads it.
        let world = try await World.start(names: .prefixed("resumed"))
        let first = try await world.events("resource=resumedgroups&resource=resumedrows")
        _ = try await Self.announcements(first, 2)
        var lastID: String?
        for _ in 0..<2 { lastID = try await first.next(type: "snapshot").id }
        let resumeFrom = try #require(lastID)
        first.close()
        #expect(try await world.untilNothingSubscribed())

        // Nothing changed: the reconnect sends no document (once the groups and the rows are
        // fetched again, the first snapshot is the one a change causes).
        var before = world.upstream.requests.count
        let unchanged = try await world.events("resource=resumedgroups&resource=resumedrows", headers: [("Last-Event-ID", resumeFrom)])
        let rowsID = try await Self.announcements(unchanged, 2)[1].id
        #expect(await world.fetchedAgain(since: before))
        world.groups.update { $0.groups[0].taskCount = 4242 }
        try await world.reloadGroupsAndWait()
        let changed = try TaggedSnapshot(try await unchanged.next())
        #expect(changed.resource == "resumedgroups")
        #expect(changed.document == world.groups.value.mergedJSON)
        let rowsVersion = TaggedSnapshot.versions(in: resumeFrom)["resumedrows"]
        #expect(changed.version(of: "resumedrows") == rowsVersion, "the client still has the rows it had")
        #expect(try await world.loadMore(rowsID, topic: "a").status == 202)
        let loaded = try TaggedSnapshot(try await unchanged.next())
        #expect(loaded.resource == "resumedrows")
        #expect(loaded.document == world.media.value.rowsJSON(loaded: ["a": 2]))
        unchanged.close()
        #expect(try await world.untilNothingSubscribed())

        // The groups changed while the client was away: only they are sent again.
        world.groups.update { $0.groups[1].taskCount = 777 }
        before = world.upstream.requests.count
        let resumed = try await world.events("resource=resumedgroups&resource=resumedrows", headers: [("Last-Event-ID", resumeFrom)])
        let ids = try await Self.announcements(resumed, 2)
        #expect(await world.fetchedAgain(since: before))
        let groups = try TaggedSnapshot(try await resumed.next())
        #expect(groups.resource == "resumedgroups")
        #expect(groups.document == world.groups.value.mergedJSON)
        #expect(groups.version(of: "resumedrows") == rowsVersion)
        #expect(try await world.loadMore(ids[1].id, topic: "b").status == 202)
        let rows = try TaggedSnapshot(try await resumed.next())
        #expect(rows.resource == "resumedrows", "the unchanged rows were not sent again")
        #expect(rows.document == world.media.value.rowsJSON(loaded: ["b": 2]))
        #expect(rows.version(of: "resumedgroups") == groups.version(of: "resumedgroups"))
        resumed.close()
        await world.stop()
    }

    @Test("a Last-Event-ID that names no resource's version (a single stream's, or garbage) is ignored: every document is sent")
    func oddLastEventID() async throws {
        let world = try await World.start()
        for lastID in ["0123456789abcdef", "garbage,:,groups:,:0123456789abcdef,rows"] {
            let stream = try await world.events("resource=groups&resource=rows", headers: [("Last-Event-ID", lastID)])
            _ = try await Self.announcements(stream, 2)
            var resources: Set<String> = []
            for _ in 0..<2 { resources.insert(try TaggedSnapshot(try await stream.next()).resource) }
            #expect(resources == ["groups", "rows"], "Last-Event-ID: \(lastID)")
            stream.close()
        }
        await world.stop()
    }

    @Test("triggers and inputs reach each resource through its announced id, from any worker; each id reaches only its own")
    func triggersAndInputs() async throws {
        let world = try await World.start()
        let other = try await ServiceHarness(
            yaml: World.yaml(upstream: world.upstream.baseURL, names: Names(), heartbeat: "15s"), shares: world.service.shares)
        let stream = try await world.events("resource=groups&resource=rows&resource=search&search.q=swi")
        let ids = Dictionary(uniqueKeysWithValues: try await Self.announcements(stream, 3).map { ($0.resource, $0.id) })
        var seen: Set<String> = []
        while seen.count < 3 { seen.insert(try TaggedSnapshot(try await stream.next()).resource) }
        let port = other.port

        #expect(try await TestHTTP.request(port: port, "POST", "/streams/\(ids["rows"]!)/triggers/loadMore?topic=b").status == 202)
        let rows = try TaggedSnapshot(try await stream.next())
        #expect(rows.resource == "rows")
        #expect(rows.document == world.media.value.rowsJSON(loaded: ["b": 2]))

        let input = try await TestHTTP.request(port: port, "PUT", "/streams/\(ids["search"]!)/inputs/q", body: Array("vapor".utf8))
        #expect(input.status == 202)
        let search = try TaggedSnapshot(try await stream.next())
        #expect(search.resource == "search")
        #expect(search.document == SearchFixture.itemsJSON(for: "vapor"))

        world.groups.update { $0.groups[2].taskCount = 31337 }
        #expect(try await TestHTTP.request(port: port, "POST", "/streams/\(ids["groups"]!)/triggers/reload").status == 202)
        let groups = try TaggedSnapshot(try await stream.next())
        #expect(groups.resource == "groups")
        #expect(groups.document == world.groups.value.mergedJSON)

        let misdirected = try await TestHTTP.request(port: port, "PUT", "/streams/\(ids["rows"]!)/inputs/q", body: Array("nginx".utf8))
        #expect(misdirected.status == 404)
        #expect(misdirected.error?.code == "unknown_input")
        let wrongTrigger = try await TestHTTP.request(port: port, "POST", "/streams/\(ids["search"]!)/triggers/loadMore?topic=a")
        #expect(wrongTrigger.status == 404)
        #expect(wrongTrigger.error?.code == "unknown_trigger")

        stream.close()
        // Once the stream is gone, so are its ids (a request on a fresh connection to its
        // worker is answered after that worker saw the close).
        #expect(try await world.service.get("/healthz").status == 200)
        #expect(try await TestHTTP.request(port: port, "POST", "/streams/\(ids["rows"]!)/triggers/reload").status == 404)
        await other.stop()
        await world.stop()
    }

    @Test("an upstream failure is an error event tagged with its resource; the others carry on; recovery resends the snapshot")
    func errorTagged() async throws {
        let world = try await World.start()
        let stream = try await world.events("resource=groups&resource=rows")
        let ids = try await Self.announcements(stream, 2)
        var first: TaggedSnapshot?
        for _ in 0..<2 {
            let snapshot = try TaggedSnapshot(try await stream.next())
            if snapshot.resource == "groups" { first = snapshot }
        }
        world.failGroups.update { $0 = true }
        #expect(try await world.service.post("/groups/reload").status == 202)
        let error = try await stream.next()
        #expect(error.type == "error")
        #expect(error.id == nil)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(error.data.utf8)) as? [String: Any])
        #expect(object["resource"] as? String == "groups")
        let detail = try #require(object["error"] as? [String: Any])
        #expect(detail["code"] as? String == "upstream_status")
        #expect((detail["message"] as? String)?.contains("upstream tasks") == true)

        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(ids[1].id)/triggers/loadMore?topic=a").status == 202)
        let rows = try TaggedSnapshot(try await stream.next())
        #expect(rows.resource == "rows")
        #expect(rows.document == world.media.value.rowsJSON(loaded: ["a": 2]))

        world.failGroups.update { $0 = false }
        #expect(try await world.service.post("/groups/reload").status == 202)
        let recovered = try TaggedSnapshot(try await stream.next())
        #expect(recovered.resource == "groups")
        #expect(recovered.document == world.groups.value.mergedJSON, "unchanged, sent again so the client knows it is current")
        #expect(recovered.version(of: "groups") == first?.version(of: "groups"))
        #expect(recovered.version(of: "rows") == rows.version(of: "rows"))
        stream.close()
        await world.stop()
    }

    @Test("the client going away cancels every resource's pipeline and every upstream call still in flight")
    func disconnectCancels() async throws {
        let world = try await World.start(names: .prefixed("dropped"))
        world.hangMetadata.update { $0 = true }
        let stream = try await world.events("resource=droppedgroups&resource=droppedsearch&droppedsearch.q=slowly&resource=droppedrows")
        _ = try await Self.announcements(stream, 3)
        _ = try await stream.next(type: "snapshot")   // the rows
        // Three metadata calls and the search hang.
        #expect(await world.upstream.records.wait(timeout: .seconds(5)) { $0.filter(\.inFlight).count == 4 })
        #expect(try await world.gauge("tributary_live_pipelines", "droppedgroups") == 1)
        stream.close()
        #expect(await world.upstream.records.wait(timeout: .seconds(10)) { $0.allSatisfy { !$0.inFlight } })
        #expect(world.upstream.requests.filter(\.closedByClient).count == 4)
        #expect(world.upstream.requests.filter { $0.closedByClient && $0.query["q"] == "slowly" }.count == 1)
        #expect(try await world.nothingSubscribed())
        await world.stop()
    }

    @Test("quiet streams get heartbeat comments")
    func heartbeats() async throws {
        let world = try await World.start(heartbeat: "50ms")
        let stream = try await world.events("resource=groups&resource=rows")
        for _ in 0..<2 { _ = try await stream.next(type: "snapshot") }
        #expect(try await stream.nextComment() == " heartbeat")
        #expect(try await stream.nextComment() == " heartbeat")
        stream.close()
        await world.stop()
    }

    @Test("a client that stops reading gets each resource's latest snapshot when it catches up, not every one it missed")
    func slowReaderGetsLatest() async throws {
        let world = try await World.start(groups: 150, nameLength: 2000)
        let slow = try await world.events("resource=groups&resource=rows", receiveBuffer: 4096)
        _ = try await Self.announcements(slow, 2)
        // A client that reads, to know when each state has been fanned out.
        let fast = try await world.events("resource=groups")
        _ = try await fast.next(type: "snapshot")
        // The slow one does not read: ten ~300 KB snapshots meet a full socket (the service
        // caps its send buffer for streams, the client reads through a 4 KB window).
        for round in 1...10 {
            world.groups.update { $0.groups[0].taskCount = 1000 + round }
            #expect(try await world.service.post("/groups/reload").status == 202)
            let state = world.groups.value.mergedJSON
            while try TaggedSnapshot(try await fast.next(type: "snapshot")).document != state {}
        }
        slow.connection.setTimeout(.seconds(10))
        let latest = world.groups.value.mergedJSON
        var groups: [TaggedSnapshot] = []
        var rows: [TaggedSnapshot] = []
        while groups.last?.document != latest || rows.isEmpty, let event = try? await slow.next(type: "snapshot") {
            let snapshot = try TaggedSnapshot(event)
            if snapshot.resource == "groups" { groups.append(snapshot) } else { rows.append(snapshot) }
        }
        #expect(groups.last?.document == latest)
        #expect(groups.count <= 3, "\(groups.count) snapshots: missed states were queued instead of conflated")
        #expect(rows.count == 1)
        #expect(rows.first?.document == world.media.value.rowsJSON())
        slow.close()
        fast.close()
        await world.stop()
    }

    @Test("in a fleet, a trigger or an input sent to another replica reaches its resource on an /events stream")
    func controlAcrossReplicas() async throws {
        let fleet = try await FleetTests.Fleet.start(replicas: 2, refresh: "1h")
        let media = MediaFixture(topics: ["a", "b"])
        let stream = try await SSEClient(port: fleet.replicas[0].port, path: "/events?resource=rows&resource=search&search.q=swi")
        let ids = try await Self.announcements(stream, 2)
        for _ in 0..<2 { _ = try await stream.next(type: "snapshot") }
        let other = fleet.replicas[1].port

        #expect(try await TestHTTP.request(port: other, "POST", "/streams/\(ids[0].id)/triggers/loadMore?topic=a").status == 202)
        let rows = try TaggedSnapshot(try await stream.next())
        #expect(rows.resource == "rows")
        #expect(rows.document == media.rowsJSON(loaded: ["a": 2]))

        let input = try await TestHTTP.request(port: other, "PUT", "/streams/\(ids[1].id)/inputs/q", body: Array("vapor".utf8))
        #expect(input.status == 202)
        let search = try TaggedSnapshot(try await stream.next())
        #expect(search.resource == "search")
        #expect(search.document == SearchFixture.itemsJSON(for: "vapor"))
        #expect(search.version(of: "rows") == rows.version(of: "rows"))
        stream.close()
        await fleet.stop()
    }
}

extension EventsStreamTests.TaggedSnapshot {
    /// The versions by resource in a composite id.
    static func versions(in id: String) -> [String: String] {
        var versions: [String: String] = [:]
        for entry in id.split(separator: ",") {
            let parts = entry.split(separator: ":")
            if parts.count == 2 { versions[String(parts[0])] = String(parts[1]) }
        }
        return versions
    }
}
