import Aggregation
import HTTPCore
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("fields=…: each element keeps only the members asked for, on JSON GETs, streams and /events")
struct ProjectedFieldsTests {
    typealias World = GroupsStreamTests.World

    /// The fixture's `/groups` as `members` of each group show it, in the merged order.
    static func projected(_ fixture: TaskGroupsFixture, _ members: Set<String>) -> String {
        "[" + fixture.groups.map { group in
            let all: [(String, String)] = [
                ("id", JSONWriter.string(group.id)), ("name", JSONWriter.string(group.name)),
                ("taskCount", "\(group.taskCount)"), ("lastUpdated", JSONWriter.string(group.lastUpdated)),
            ]
            return "{" + all.filter { members.contains($0.0) }.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
        }.joined(separator: ",") + "]"
    }

    @Test("a JSON GET keeps the members named, in the element's order; its ETag is the kept document's, and answers 304")
    func jsonGet() async throws {
        let world = try await World.start(groups: 6)
        let whole = try await world.service.get("/groups")
        let answer = try await world.service.get("/groups?fields=name,id")
        #expect(answer.status == 200)
        #expect(answer.text == Self.projected(world.fixture.value, ["id", "name"]))
        let etag = try #require(answer.header("ETag"))
        #expect(etag != whole.header("ETag"))
        #expect(etag == "\"\(Snapshot(json: answer.body).version)\"")
        // The same fields in another order, or repeated, are the same document.
        let again = try await world.service.get("/groups?fields=id,name,id", headers: [("If-None-Match", etag)])
        #expect(again.status == 304)
        await world.stop()
    }

    @Test("refused before any upstream call: an empty name, an empty dotted part, 65 names, a name of 129 bytes",
          arguments: ["", "id,,name", "owner..login", (0...64).map { "f\($0)" }.joined(separator: ","), String(repeating: "n", count: 129)])
    func refused(_ fields: String) async throws {
        let world = try await World.start(groups: 2)
        let answer = try await world.service.get("/groups?fields=\(QueryString.percentEncoded(fields))")
        #expect(answer.status == 400)
        let error = try JSON(parsing: answer.body)["error"]
        #expect(error?["code"]?.stringValue == "invalid_parameter")
        #expect(error?["message"]?.stringValue?.hasPrefix("parameter fields ") == true)
        let stream = try await world.service.events("/groups?fields=\(QueryString.percentEncoded(fields))")
        #expect(stream.head.status == 400)
        stream.close()
        #expect(world.upstream.requests.isEmpty)
        await world.stop()
    }

    @Test("a stream's documents and patches are the kept ones; a change of a member it does not keep sends nothing")
    func stream() async throws {
        let world = try await World.start(groups: 8)
        let stream = try await world.service.events("/groups?fields=id,name&updates=patch")
        let first = try await stream.next(type: "snapshot")
        #expect(first.data == Self.projected(world.fixture.value, ["id", "name"]))

        // Only counts and dates change: the kept document is the same, and no event is sent.
        world.fixture.update { fixture in
            fixture.groups[2].taskCount = 999
            fixture.groups[5].lastUpdated = "2027-01-01T00:00:00Z"
        }
        try await world.reloadAndWaitForRefresh()
        // A name changes: the next event is that change, as a patch of the kept document.
        world.fixture.update { $0.groups[4].name = "Renamed" }
        try await world.reloadAndWaitForRefresh()
        let patch = try await stream.next()
        #expect(patch.type == "patch")
        #expect(patch.data == #"[{"op":"replace","path":"/4/name","value":"Renamed"}]"#)
        // Its id is the ETag of the same fields' JSON GET.
        let answer = try await world.service.get("/groups?fields=name,id")
        #expect(answer.header("ETag") == "\"\(try #require(patch.id))\"")
        stream.close()
        await world.stop()
    }

    @Test("streams asking different fields follow one pipeline: one list call per refresh, each stream its own document")
    func onePipeline() async throws {
        let world = try await World.start(groups: 4)
        let names = try await world.service.events("/groups?fields=name")
        let counts = try await world.service.events("/groups?fields=taskCount,id")
        let everything = try await world.service.events("/groups")
        #expect(try await names.next(type: "snapshot").data == Self.projected(world.fixture.value, ["name"]))
        #expect(try await counts.next(type: "snapshot").data == Self.projected(world.fixture.value, ["id", "taskCount"]))
        #expect(try await everything.next(type: "snapshot").data == world.fixture.value.mergedJSON)
        #expect(world.listCalls == 1)
        world.changeTaskCount(of: 1, to: 500)
        try await world.reloadAndWaitForRefresh()
        #expect(world.listCalls == 2)
        #expect(try await counts.next(type: "snapshot").data == Self.projected(world.fixture.value, ["id", "taskCount"]))
        #expect(try await everything.next(type: "snapshot").data == world.fixture.value.mergedJSON)
        // The names did not change: the next event the names stream gets is the next name change.
        world.fixture.update { $0.groups[0].name = "First" }
        try await world.reloadAndWaitForRefresh()
        #expect(try await names.next(type: "snapshot").data == Self.projected(world.fixture.value, ["name"]))
        for stream in [names, counts, everything] { stream.close() }
        await world.stop()
    }

    @Test("GET /events takes <resource>.fields for each resource it carries")
    func events() async throws {
        let world = try await World.start(groups: 3)
        let stream = try await world.service.events("/events?resource=groups&groups.fields=lastUpdated")
        let snapshot = try await stream.next(type: "snapshot")
        let data = try JSON(parsing: Array(snapshot.data.utf8))
        #expect(data["data"]?.serialized == Array(Self.projected(world.fixture.value, ["lastUpdated"]).utf8))
        stream.close()
        let refused = try await world.service.events("/events?resource=groups&groups.fields=a,,b")
        #expect(refused.head.status == 400)
        refused.close()
        await world.stop()
    }

    @Test("a Last-Event-ID naming the kept document's version resumes from it: the next change is a patch of the kept members")
    func resumeFromProjectedVersion() async throws {
        let world = try await World.start(groups: 8)
        // Kept open: the pipeline keeps its current document, which the resumed stream starts from.
        let first = try await world.service.events("/groups?fields=id,name&updates=patch")
        let snapshot = try await first.next(type: "snapshot")
        let resumed = try await world.service.events(
            "/groups?fields=id,name&updates=patch", headers: [("Last-Event-ID", try #require(snapshot.id))])
        _ = try await resumed.next(type: "stream")
        world.fixture.update { $0.groups[1].taskCount = 77 }      // not kept: nothing for this stream
        try await world.reloadAndWaitForRefresh()
        world.fixture.update { $0.groups[6].name = "Six" }
        try await world.reloadAndWaitForRefresh()
        let next = try await resumed.next()
        #expect(next.type == "patch", "the client has the kept document: no snapshot again")
        #expect(next.data == #"[{"op":"replace","path":"/6/name","value":"Six"}]"#)
        resumed.close()
        first.close()
        await world.stop()
    }

    @Test("GET /events with several projections: each resource keeps its own fields")
    func eventsSeveralProjections() async throws {
        let world = try await EventsStreamTests.World.start(groups: 3)
        let stream = try await world.service.events(
            "/events?resource=groups&resource=rows&groups.fields=name&rows.fields=topic.title,medias.id")
        var documents: [String: JSON] = [:]
        while documents.count < 2 {
            let data = try JSON(parsing: Array(try await stream.next(type: "snapshot").data.utf8))
            documents[try #require(data["resource"]?.stringValue)] = data["data"]
        }
        let groups = try #require(documents["groups"]?.arrayValue)
        #expect(groups.count == 3 && groups.allSatisfy { $0.objectValue?.map(\.key) == ["name"] })
        let rows = try #require(documents["rows"]?.arrayValue)
        #expect(!rows.isEmpty)
        for row in rows {
            #expect(row.objectValue?.map(\.key) == ["topic", "medias"])
            #expect(row["topic"]?.objectValue?.map(\.key) == ["title"])
            #expect(row["medias"]?.arrayValue?.allSatisfy { $0.objectValue?.map(\.key) == ["id"] } == true)
        }
        stream.close()
        await world.stop()
    }

    @Test("resources.NAME.fields is what the resource serves at all; a client's fields only narrow it")
    func servedFields() async throws {
        let world = try await World.start(groups: 3, yaml: "fields: [id, name, taskCount]")
        #expect(try await world.service.get("/groups").text == Self.projected(world.fixture.value, ["id", "name", "taskCount"]))
        #expect(try await world.service.get("/groups?fields=lastUpdated,name").text == Self.projected(world.fixture.value, ["name"]))
        let stream = try await world.service.events("/groups")
        #expect(try await stream.next(type: "snapshot").data == Self.projected(world.fixture.value, ["id", "name", "taskCount"]))
        stream.close()
        let openAPI = try JSON(parsing: try await world.service.get("/openapi.json").body)
        let parameters = openAPI["paths"]?["/groups"]?["get"]?["parameters"]?.arrayValue ?? []
        let fields = try #require(parameters.first { $0["name"]?.stringValue == "fields" })
        #expect(fields["in"]?.stringValue == "query")
        #expect(fields["description"]?.stringValue?.contains("serves only `id,name,taskCount`") == true)
        await world.stop()
    }

    @Test("a failed item keeps its error whatever fields are asked")
    func failedItemKeepsError() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let failing = fixture.groups[1].id
        let upstream = try await ScriptedUpstream.start { request in
            if fixture.group(forMetadataPath: request.path)?.id == failing { return .json(#"{"e":1}"#, status: 500) }
            return fixture.reply(to: request) ?? .json("{}", status: 404)
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "onItemFailure: mark"))
        let document = try JSON(parsing: try await service.get("/groups?fields=id").body)
        let items = try #require(document.arrayValue)
        #expect(items.count == 3)
        #expect(items[0].objectValue?.map(\.key) == ["id"])
        #expect(items[1].objectValue?.map(\.key) == ["id", "error"])
        #expect(items[1]["error"]?["code"]?.stringValue == "upstream_status")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("the configuration refuses a bad fields list, and a parameter named fields, naming the key")
    func configuration() {
        let base = ServiceHarness.groupsYAML(upstream: "http://127.0.0.1:9")
        #expect(throws: ConfigurationError.self) { try Configuration.load(yaml: base + "\n    fields: [id, \"\"]", file: "t.yaml") }
        do {
            _ = try Configuration.load(yaml: base + "\n    fields: [id, \"a..b\"]", file: "t.yaml")
            Issue.record("a..b was accepted")
        } catch {
            #expect("\(error)".contains("resources.groups.fields"))
        }
        // Every query name the service reads itself: a parameter of that name would never reach
        // its resource, and an access_token would go into upstream paths and fleet messages.
        for name in ["fields", "access_token", "updates", "progressive"] {
            let parameter = base + "\n    route: /g/{\(name)}\n    parameters: {\(name): {pattern: \"^[a-z]+$\"}}"
            do {
                _ = try Configuration.load(yaml: parameter, file: "t.yaml")
                Issue.record("a parameter named \(name) was accepted")
            } catch {
                #expect("\(error)".contains("resources.groups.parameters.\(name)") && "\(error)".contains("own query parameter"), "\(error)")
            }
        }
    }
}
