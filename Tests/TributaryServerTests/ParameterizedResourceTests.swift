import HTTPCore
import Testing
import TributaryTesting

/// Parameterized resources (DESIGN, part 3): the client names which list it wants, by its
/// route's segments and declared query parameters, and the upstream calls follow, each value
/// percent-encoded into its place. Against a real worker and a scripted upstream that serves
/// each team's own groups and records every call as it was sent.
@Suite("Parameterized resources: route and query parameters reach the upstream calls")
struct ParameterizedResourceTests {
    /// The upstream: `GET /teams/{team}/groups?status=S[&tag=T]` lists three groups named after
    /// team and status (and tag), `GET /teams/{team}/groups/{id}/metadata` their details.
    /// Values are read back from the target as sent, so what reached the upstream is checked,
    /// not what a lenient server would make of it.
    struct Teams {
        let upstream: ScriptedUpstream
        let service: ServiceHarness

        static func start(resource extra: String = "", listDelay: Duration = .zero, maxLivePipelines: Int = 1000) async throws -> Teams {
            let upstream = try await ScriptedUpstream.start { request in Self.reply(to: request, listDelay: listDelay) }
            let service = try await ServiceHarness(yaml: yaml(upstream: upstream.baseURL, extra: extra, maxLivePipelines: maxLivePipelines))
            return Teams(upstream: upstream, service: service)
        }

        static func yaml(upstream: String, extra: String, maxLivePipelines: Int) -> String {
            """
            upstreams:
              tasks: {url: "\(upstream)", timeout: 10s, retries: 0}
            resources:
              teamgroups:
                kind: list
                upstream: tasks
                route: /teams/{team}/groups
                parameters:
                  team: {pattern: "^[^A-Z]{1,40}$"}
                  status: {in: query, enum: [open, done], default: open}
                  tag: {in: query}
                list: {path: "/teams/{team}/groups?status={status}&tag={tag}", items: result, id: id}
                details: {path: "/teams/{team}/groups/{id}/metadata", value: result}
                refreshInterval: 1h
                maxLivePipelines: \(maxLivePipelines)
            \(extra)
            """
        }

        /// The segments of a target's path and its query pairs, each percent-decoded.
        static func parts(of uri: String) -> (segments: [String], query: [String: String]) {
            let pieces = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
            let segments = pieces[0].split(separator: "/").map { QueryString.percentDecoded(String($0)) ?? "<bad>" }
            return (segments, pieces.count > 1 ? QueryString.parse(String(pieces[1])) : [:])
        }

        static func reply(to request: RecordedRequest, listDelay: Duration) -> UpstreamReply {
            let (segments, query) = parts(of: request.uri)
            guard segments.count >= 3, segments[0] == "teams", segments[2] == "groups" else { return .json("{}", status: 404) }
            let team = segments[1]
            if segments.count == 3 {
                let label = "\(team)/\(query["status"] ?? "-")/\(query["tag"] ?? "-")"
                return .json(#"{"result":["# + (0..<3).map { #"{"id":"g\#($0)","name":"# + JSONWriter.string(label) + "}" }
                    .joined(separator: ",") + "]}", delay: listDelay)
            }
            guard segments.count == 5, segments[4] == "metadata" else { return .json("{}", status: 404) }
            return .json(#"{"result":{"team":"# + JSONWriter.string(team) + "}}")
        }

        /// What the service must answer for `team`, `status` and `tag`.
        static func document(team: String, status: String = "open", tag: String = "") -> String {
            let label = JSONWriter.string("\(team)/\(status)/\(tag)"), owner = JSONWriter.string(team)
            return "[" + (0..<3).map { #"{"id":"g\#($0)","name":"# + label + #","team":"# + owner + "}" }.joined(separator: ",") + "]"
        }

        /// The list calls made so far, as their targets were sent.
        var listCalls: [String] { upstream.requests.map(\.uri).filter { $0.hasSuffix("/groups") || $0.contains("/groups?") } }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    @Test("a route segment and query values reach the list and detail paths; an absent query value takes its default")
    func valuesReachTheirPlaces() async throws {
        let teams = try await Teams.start()
        let core = try await teams.service.get("/teams/core/groups")
        #expect(core.status == 200)
        #expect(core.text == Teams.document(team: "core"))
        let done = try await teams.service.get("/teams/core/groups?status=done&tag=urgent")
        #expect(done.text == Teams.document(team: "core", status: "done", tag: "urgent"))
        #expect(teams.listCalls == ["/teams/core/groups?status=open&tag=", "/teams/core/groups?status=done&tag=urgent"])
        let details = teams.upstream.requests.map(\.uri).filter { $0.hasSuffix("/metadata") }
        #expect(details.count == 6)
        #expect(details.allSatisfy { $0.hasPrefix("/teams/core/groups/g") })
        await teams.stop()
    }

    @Test("hostile values are percent-encoded into one segment or one value: ../x, spaces, & = + ? # %, /, unicode, dots that are not a whole segment", arguments: [
        "../x", "a b", "a&b=c", "x+y", "q?r", "h#i", "100%", "é漢🚀", "a/b", "...", ".x", "x..", "a/../b",
    ])
    func hostileValues(value: String) async throws {
        let teams = try await Teams.start()
        let encoded = QueryString.percentEncoded(value)
        let answer = try await teams.service.get("/teams/\(encoded)/groups?tag=\(encoded)")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.text == Teams.document(team: value, tag: value))
        let call = try #require(teams.listCalls.first)
        #expect(call == "/teams/\(encoded)/groups?status=open&tag=\(encoded)", "each byte but the unreserved encoded")
        #expect(!call.dropFirst("/teams/".count).contains("/groups/"), "the value stays one segment")
        await teams.stop()
    }

    @Test("a dot segment as a value is 400 invalid_parameter whatever the pattern, as JSON and for a stream, with no upstream call",
          arguments: [".", "..", "%2e", "%2E%2e", ".%2E", "%2E."])
    func dotSegmentsRefused(encoded: String) async throws {
        // The pattern allows anything but capitals: dots and slashes included, as GitHub's
        // names allow dots (`^[\\w.-]+$`).
        let teams = try await Teams.start()
        for path in ["/teams/\(encoded)/groups", "/teams/core/groups?tag=\(encoded)"] {
            let answer = try await teams.service.get(path)
            #expect(answer.status == 400, "\(path)")
            #expect(answer.error?.code == "invalid_parameter", "\(path)")
            #expect(answer.error?.message.contains("parameter \(path.hasPrefix("/teams/core") ? "tag" : "team")") == true, "\(path)")
            let stream = try await teams.service.events(path)
            #expect(stream.head.status == 400, "\(path)")
            stream.close()
        }
        let events = try await teams.service.events("/events?resource=teamgroups&teamgroups.team=\(encoded)")
        #expect(events.head.status == 400)
        events.close()
        #expect(teams.upstream.requests.isEmpty, "no call climbs, none is made")
        await teams.stop()
    }

    @Test("values are keyed by their bytes: K and the Kelvin sign, é and e + U+0301 are two pipelines, two upstream calls, two documents",
          arguments: [("K", "\u{212A}"), ("\u{E9}", "e\u{301}"), ("\u{212B}", "\u{C5}")])
    func valuesKeyedByBytes(first: String, second: String) async throws {
        #expect(first == second, "Swift's String equality takes these for one value")
        // Served at /f/{team}/groups, as GitHub's names are: a pattern of word characters.
        let teams = try await Teams.start(resource: """
              fgroups:
                kind: list
                upstream: tasks
                route: /f/{team}/groups
                parameters: {team: {pattern: "^[\\\\w.-]+$"}}
                list: {path: "/teams/{team}/groups?status=open&tag=", items: result, id: id}
                details: {path: "/teams/{team}/groups/{id}/metadata", value: result}
                refreshInterval: 1h
            """)
        let (one, other) = ("\(first)ilo", "\(second)ilo")
        // A stream of one value holds its pipeline; a JSON GET of the other, then a stream.
        let held = try await teams.service.events("/f/\(QueryString.percentEncoded(one))/groups")
        #expect(try await held.next(type: "snapshot").data == Teams.document(team: one))
        let answer = try await teams.service.get("/f/\(QueryString.percentEncoded(other))/groups")
        #expect(answer.text == Teams.document(team: other))
        let stream = try await teams.service.events("/f/\(QueryString.percentEncoded(other))/groups")
        let document = try await stream.next(type: "snapshot").data
        #expect(document == Teams.document(team: other))
        #expect(!document.utf8.elementsEqual(Teams.document(team: one).utf8))
        let asked = Set(teams.listCalls.map { Array($0.utf8) })
        #expect(asked.contains(Array("/teams/\(QueryString.percentEncoded(one))/groups?status=open&tag=".utf8)))
        #expect(asked.contains(Array("/teams/\(QueryString.percentEncoded(other))/groups?status=open&tag=".utf8)))
        held.close()
        stream.close()
        await teams.stop()
    }

    @Test("a missing required, or invalid, parameter is 400 naming it, as JSON and for a stream, with no upstream call")
    func refusedBeforeAnyCall() async throws {
        let teams = try await Teams.start(resource: """
              bylabel:
                kind: list
                upstream: tasks
                parameters: {label: {in: query, required: true}}
                list: {path: "/teams/{label}/groups", items: result, id: id}
                details: {path: "/teams/{label}/groups/{id}/metadata", value: result}
            """)
        let cases: [(path: String, code: String, parameter: String)] = [
            ("/teams/Core/groups", "invalid_parameter", "team"),
            ("/teams/core/groups?status=closed", "invalid_parameter", "status"),
            ("/teams/core/groups?tag=" + String(repeating: "x", count: 1025), "invalid_parameter", "tag"),
            ("/bylabel", "missing_parameter", "label"),
            ("/bylabel?label=", "missing_parameter", "label"),
        ]
        for (path, code, parameter) in cases {
            for accept in ["application/json", "text/event-stream"] {
                let answer = try await teams.service.get(path, headers: [("Accept", accept)])
                #expect(answer.status == 400, "\(path) \(accept)")
                #expect(answer.error?.code == code, "\(path) \(accept)")
                #expect(answer.error?.message.contains(parameter) == true, "\(path) \(accept): \(answer.text)")
                #expect(answer.header("Content-Type") == "application/json", "\(path) \(accept): before any event")
            }
        }
        #expect(teams.upstream.requests.isEmpty)
        await teams.stop()
    }

    @Test("undeclared query parameters are ignored and shape nothing: requests that differ only in them share one run")
    func undeclaredIgnored() async throws {
        let teams = try await Teams.start(listDelay: .milliseconds(500))
        async let first = teams.service.get("/teams/core/groups?utm=a")
        async let second = teams.service.get("/teams/core/groups?other=b&status=open")
        let answers = try await [first, second]
        #expect(answers.allSatisfy { $0.text == Teams.document(team: "core") })
        #expect(teams.listCalls == ["/teams/core/groups?status=open&tag="])
        await teams.stop()
    }

    @Test("concurrent requests for two teams never cross, with coalescing on: 20 rounds of 8 requests each")
    func concurrentValuesNeverCross() async throws {
        let teams = try await Teams.start(listDelay: .milliseconds(50))
        for _ in 0..<20 {
            let answers = try await withThrowingTaskGroup(of: (String, TestResponse).self) { group in
                for index in 0..<8 {
                    let team = index % 2 == 0 ? "a" : "b"
                    group.addTask { (team, try await teams.service.get("/teams/\(team)/groups")) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (team, answer) in answers { #expect(answer.text == Teams.document(team: team)) }
        }
        await teams.stop()
    }

    @Test("streams of one value share one pipeline; another value runs its own; parameters are fixed when a stream opens")
    func streamsPerValueShare() async throws {
        let teams = try await Teams.start()
        var streams: [SSEClient] = []
        for path in ["/teams/a/groups", "/teams/a/groups?status=open", "/teams/b/groups", "/teams/a/groups?utm=x"] {
            let stream = try await teams.service.events(path)
            let team = path.contains("/b/") ? "b" : "a"
            #expect(try await stream.next(type: "snapshot").data == Teams.document(team: team), "\(path)")
            streams.append(stream)
        }
        #expect(teams.listCalls.sorted() == ["/teams/a/groups?status=open&tag=", "/teams/b/groups?status=open&tag="])
        #expect(try await teams.service.post("/teamgroups/reload").status == 202)
        let isList: @Sendable (String) -> Bool = { uri in uri.contains("/groups?") }
        #expect(await teams.upstream.records.wait(timeout: .seconds(5)) { $0.filter { isList($0.uri) }.count >= 4 })
        #expect(await teams.upstream.records.wait(timeout: .seconds(5)) { $0.allSatisfy { !$0.inFlight } })
        #expect(teams.listCalls.count == 4, "the reload refreshed each pipeline once, whatever its streams")
        for stream in streams { stream.close() }
        await teams.stop()
    }

    @Test("live pipelines per resource are bounded: one more value's stream is 503 too_many_pipelines until one is released")
    func pipelinesBounded() async throws {
        // One client may start them all here: the bound alone (clientShare tests the share).
        let teams = try await Teams.start(resource: "server: {maxClientSharePercent: 100}", maxLivePipelines: 2)
        let a = try await teams.service.events("/teams/a/groups")
        let b = try await teams.service.events("/teams/b/groups")
        _ = try await a.next(type: "snapshot")
        _ = try await b.next(type: "snapshot")
        let joined = try await teams.service.events("/teams/a/groups")
        #expect(joined.head.status == 200, "a value that has its pipeline joins it")
        let refused = try await teams.service.get("/teams/c/groups", headers: [("Accept", "text/event-stream")])
        #expect(refused.status == 503)
        #expect(refused.error?.code == "too_many_pipelines")
        #expect(try await teams.service.get("/teams/c/groups").status == 200, "a JSON answer needs no live pipeline")
        b.close()
        // The pipeline of b goes with its last stream: c's stream is let in once it has.
        var admitted: SSEClient?
        let deadline = ContinuousClock.now + .seconds(10)
        while admitted == nil && ContinuousClock.now < deadline {
            let attempt = try await teams.service.events("/teams/c/groups")
            if attempt.head.status == 200 { admitted = attempt } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        let c = try #require(admitted)
        #expect(try await c.next(type: "snapshot").data == Teams.document(team: "c"))
        for stream in [a, joined, c] { stream.close() }
        await teams.stop()
    }

    @Test("GET /events takes a resource's parameters prefixed with its name, and refuses bad ones before any event")
    func eventsWithPrefixedParameters() async throws {
        let teams = try await Teams.start()
        let stream = try await teams.service.events("/events?resource=teamgroups&teamgroups.team=core&teamgroups.status=done")
        #expect(stream.head.status == 200)
        let snapshot = try await stream.next(type: "snapshot")
        #expect(snapshot.data == #"{"resource":"teamgroups","data":"# + Teams.document(team: "core", status: "done") + "}")
        stream.close()
        let missing = try await teams.service.get("/events?resource=teamgroups", headers: [("Accept", "text/event-stream")])
        #expect(missing.status == 400)
        #expect(missing.error?.code == "missing_parameter")
        #expect(missing.error?.message.contains("team") == true)
        let invalid = try await teams.service.get("/events?resource=teamgroups&teamgroups.team=A", headers: [("Accept", "text/event-stream")])
        #expect(invalid.error?.code == "invalid_parameter")
        #expect(teams.listCalls == ["/teams/core/groups?status=done&tag="])
        await teams.stop()
    }
}
