import Foundation
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

/// Identity forwarding (DESIGN, part 3): a resource whose upstream forwards the client's
/// `Authorization` is per identity, and nothing the service shares — coalesced runs, live
/// pipelines, stale documents, the fleet's leases and channels — ever hands one identity's
/// document to another. Against a real worker (or real processes and a real Redis) and a
/// scripted upstream that answers per `Authorization` and records what each call carried.
@Suite("Identity: forwarded credentials, and sharing that never crosses identities")
struct IdentityTests {
    /// Per `Authorization` (none: the anonymous document) its own groups, named after whose
    /// they are, and a list call that takes `listDelay`; `failing` makes every call 503.
    final class PerUserUpstream: Sendable {
        let server: ScriptedUpstream
        let failing = Observed(false)
        /// Bumped to change every document (a refresh then has news for every stream).
        let version = Observed(0)

        init(listDelay: Duration = .zero) async throws {
            let failing = self.failing, version = self.version
            server = try await ScriptedUpstream.start { request in
                if failing.value { return .json(#"{"down":true}"#, status: 503) }
                let owner = Self.owner(of: request.header("Authorization"))
                if request.path == "/groups" {
                    return .json(#"{"result":[{"id":"\#(owner)-1","name":"\#(owner) v\#(version.value)"}]}"#, delay: listDelay)
                }
                guard request.path == "/groups/\(owner)-1/metadata" else { return .json(#"{"not":"yours"}"#, status: 404) }
                return .json(#"{"result":{"owner":"\#(owner)"}}"#)
            }
        }

        /// `alice` for `Bearer alice-…`; `anonymous` without a header.
        static func owner(of authorization: String?) -> String {
            guard let authorization, authorization.hasPrefix("Bearer ") else { return "anonymous" }
            return String(authorization.dropFirst(7).prefix { $0 != "-" })
        }

        /// What the service answers `owner` at `version`.
        static func document(_ owner: String, version: Int = 0) -> String {
            #"[{"id":"\#(owner)-1","name":"\#(owner) v\#(version)","owner":"\#(owner)"}]"#
        }

        /// Every call carried the credentials of the owner whose data it fetched.
        var callsCarriedTheirOwners: Bool {
            server.requests.allSatisfy { request in
                let owner = Self.owner(of: request.header("Authorization"))
                return request.path == "/groups" || request.path.hasPrefix("/groups/\(owner)-")
            }
        }
    }

    static let alice = [("Authorization", "Bearer alice-7f3a")]
    static let bob = [("Authorization", "Bearer bob-19c2")]

    static func yaml(upstream: String, extra: String = "", resource: String = "") -> String {
        """
        \(extra)
        upstreams:
          tasks: {url: "\(upstream)", timeout: 5s, retries: 1, backoff: 10ms, forward: [Authorization], circuitBreaker: {enabled: false}}
          media: {url: "\(upstream)"}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: 1h
        \(resource)
        """
    }

    @Test("two identities and anonymous clients asking the same URL at the same moment, coalescing on, each get their own document: 20 rounds")
    func concurrentSameURL() async throws {
        let upstream = try await PerUserUpstream(listDelay: .milliseconds(50))
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.server.baseURL))
        for _ in 0..<20 {
            let answers = try await withThrowingTaskGroup(of: (String, TestResponse).self) { group in
                for index in 0..<9 {
                    let (owner, headers) = [("alice", Self.alice), ("bob", Self.bob), ("anonymous", [])][index % 3]
                    group.addTask { (owner, try await service.get("/groups", headers: headers)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (owner, answer) in answers { #expect(answer.text == PerUserUpstream.document(owner), "\(owner)") }
        }
        #expect(upstream.callsCarriedTheirOwners)
        await service.stop()
        await upstream.server.shutdown()
    }

    @Test("a per-identity answer is Cache-Control: private and varies on Authorization, JSON and stream; a public one is not private")
    func privateAnswers() async throws {
        let upstream = try await PerUserUpstream()
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.server.baseURL, resource: """
              public:
                kind: list
                upstream: media
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
            """))
        let json = try await service.get("/groups", headers: Self.alice)
        #expect(json.header("Cache-Control") == "private, no-cache")
        #expect(json.header("Vary")?.contains("Authorization") == true)
        #expect(json.header("Vary")?.contains("Accept") == true)
        let stream = try await service.events("/groups", headers: Self.alice)
        #expect(stream.head.header("Cache-Control") == "private, no-cache")
        #expect(stream.head.header("Vary")?.contains("Authorization") == true)
        stream.close()
        let open = try await service.get("/public")
        #expect(open.header("Cache-Control") == "no-cache")
        #expect(open.header("Vary")?.contains("Authorization") != true)
        await service.stop()
        await upstream.server.shutdown()
    }

    @Test("live streams of two identities run a pipeline each, with their own documents; a second stream of one joins its pipeline")
    func liveStreamsPerIdentity() async throws {
        let upstream = try await PerUserUpstream()
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.server.baseURL))
        let alice = try await service.events("/groups", headers: Self.alice)
        let bob = try await service.events("/groups", headers: Self.bob)
        let aliceAgain = try await service.events("/groups", headers: Self.alice)
        #expect(try await alice.next(type: "snapshot").data == PerUserUpstream.document("alice"))
        #expect(try await bob.next(type: "snapshot").data == PerUserUpstream.document("bob"))
        #expect(try await aliceAgain.next(type: "snapshot").data == PerUserUpstream.document("alice"))
        #expect(upstream.server.requests.filter { $0.path == "/groups" }.count == 2, "one pipeline per identity")
        // A refresh of each (reload): every call carries its identity's header, retries too.
        upstream.version.update { $0 = 1 }
        #expect(try await service.post("/groups/reload").status == 202)
        #expect(try await alice.next(type: "snapshot").data == PerUserUpstream.document("alice", version: 1))
        #expect(try await bob.next(type: "snapshot").data == PerUserUpstream.document("bob", version: 1))
        #expect(upstream.callsCarriedTheirOwners)
        for stream in [alice, bob, aliceAgain] { stream.close() }
        await service.stop()
        await upstream.server.shutdown()
    }

    @Test("a retried call carries the forwarded header again")
    func retriesCarryIt() async throws {
        let calls = Observed(0)
        let upstream = try await ScriptedUpstream.start { request in
            var call = 0
            calls.update { $0 += 1; call = $0 }
            if call == 1 { return .json("{}", status: 503) }
            return request.path == "/groups" ? .json(#"{"result":[]}"#) : .json("{}", status: 404)
        }
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.baseURL))
        #expect(try await service.get("/groups", headers: Self.alice).text == "[]")
        #expect(upstream.requests.count == 2)
        #expect(upstream.requests.allSatisfy { $0.header("Authorization") == "Bearer alice-7f3a" })
        await service.stop()
        await upstream.shutdown()
    }

    @Test("stale-if-error keeps each identity's last good document for that identity only")
    func staleNeverCrosses() async throws {
        let upstream = try await PerUserUpstream()
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.server.baseURL).replacingOccurrences(
            of: "refreshInterval: 1h", with: "refreshInterval: 1h\n    staleIfError: 1m"))
        #expect(try await service.get("/groups", headers: Self.alice).text == PerUserUpstream.document("alice"))
        upstream.failing.update { $0 = true }
        let stale = try await service.get("/groups", headers: Self.alice)
        #expect(stale.text == PerUserUpstream.document("alice"))
        #expect(stale.header("Tributary-Stale") == "upstream_status")
        let bob = try await service.get("/groups", headers: Self.bob)
        #expect(bob.status == 502, "bob has no good document of his own: he gets the error, never alice's")
        #expect(!bob.text.contains("alice"))
        let anonymous = try await service.get("/groups")
        #expect(anonymous.status == 502)
        await service.stop()
        await upstream.server.shutdown()
    }

    @Test("live pipelines per identity are bounded by server.maxIdentities: a new identity's stream is 503 too_many_identities until one leaves")
    func identitiesBounded() async throws {
        let upstream = try await PerUserUpstream()
        let service = try await ServiceHarness(yaml: Self.yaml(upstream: upstream.server.baseURL, extra: "server: {maxIdentities: 1}"))
        let alice = try await service.events("/groups", headers: Self.alice)
        _ = try await alice.next(type: "snapshot")
        let anonymous = try await service.events("/groups")
        #expect(anonymous.head.status == 200, "anonymous is no identity to count")
        let refused = try await service.get("/groups", headers: [("Accept", "text/event-stream")] + Self.bob)
        #expect(refused.status == 503)
        #expect(refused.error?.code == "too_many_identities")
        #expect(try await service.get("/groups", headers: Self.bob).text == PerUserUpstream.document("bob"), "JSON needs no pipeline")
        alice.close()
        // Alice's pipeline goes with her last stream, a moment after the close: asked until then.
        var admitted: SSEClient?
        let deadline = ContinuousClock.now + .seconds(10)
        while admitted == nil && ContinuousClock.now < deadline {
            let attempt = try await service.events("/groups", headers: Self.bob)
            if attempt.head.status == 200 { admitted = attempt } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(try await #require(admitted).next(type: "snapshot").data == PerUserUpstream.document("bob"))
        admitted?.close()
        anonymous.close()
        await service.stop()
        await upstream.server.shutdown()
    }
}

/// Upstream credentials (DESIGN, part 3): configured headers, `${VAR}` from the environment,
/// on every call to their upstream and only there; their values are secrets, absent from
/// every log line, metric, error and the API description.
@Suite("Upstream credentials: configured headers, secrets kept secret")
struct UpstreamCredentialsTests {
    static let secret = "s3cr3t-" + UUID().uuidString

    static func yaml(upstream: String) -> String {
        """
        upstreams:
          tasks:
            url: "\(upstream)"
            retries: 0
            headers: {Authorization: "Bearer ${CREDENTIALS_TEST_TOKEN}", X-Api-Key: "key-${CREDENTIALS_TEST_TOKEN}"}
          media: {url: "\(upstream)"}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
          broken:
            kind: list
            upstream: tasks
            list: {path: /broken, items: result, id: id}
            details: {path: "/broken/{id}", value: result}
          rows:
            kind: pages
            upstream: media
            list: {path: /topics, items: result}
            pages: {path: "/topics/{id}/medias", items: result, cursor: next, parameter: page}
        """
    }

    @Test("every call to the upstream carries its configured headers, expanded; another upstream's calls carry none; the secret is in no log line, metric, error or /openapi.json")
    func headersAndSecrecy() async throws {
        let fixture = TaskGroupsFixture(count: 3)
        let media = MediaFixture(topics: ["a"])
        let upstream = try await ScriptedUpstream.start { request in
            if request.path == "/broken" { return .text("no \(request.header("X-Api-Key") ?? "")", status: 500) }
            return fixture.reply(to: request) ?? media.reply(to: request) ?? .json("{}", status: 404)
        }
        let service = try await ServiceProcess(
            yaml: Self.yaml(upstream: upstream.baseURL), arguments: ["--log-level", "trace"],
            environment: ["CREDENTIALS_TEST_TOKEN": Self.secret])
        #expect(try await TestHTTP.get(port: service.port, "/groups").text == fixture.mergedJSON)
        let broken = try await TestHTTP.get(port: service.port, "/broken")
        #expect(broken.status == 502)
        #expect(try await TestHTTP.get(port: service.port, "/rows").status == 200)
        let tasks = upstream.requests.filter { !$0.path.hasPrefix("/topics") }
        #expect(tasks.count == 5)
        #expect(tasks.allSatisfy { $0.header("Authorization") == "Bearer \(Self.secret)" && $0.header("X-Api-Key") == "key-\(Self.secret)" })
        #expect(upstream.requests.filter { $0.path.hasPrefix("/topics") }.allSatisfy { $0.header("Authorization") == nil && $0.header("X-Api-Key") == nil })
        let metrics = try await TestHTTP.get(port: service.port, "/metrics").text
        let description = try await TestHTTP.get(port: service.port, "/openapi.json").text
        _ = await service.terminate()
        for (what, text) in [("the log", service.output.value), ("/metrics", metrics), ("/openapi.json", description), ("an error", broken.text)] {
            #expect(!text.contains(Self.secret), "\(what) holds the secret")
        }
        #expect(service.output.value.contains("/broken"), "the log was written at trace level (the check saw it)")
        await upstream.shutdown()
    }

    @Test("a reserved header name, or one forwarded, is refused at load naming its key; an unset variable names key and variable, never a value")
    func refusedAtLoad() throws {
        let cases: [(headers: String, environment: [String: String], expected: String)] = [
            ("headers: {Host: example.org}", [:], "upstreams.tasks.headers.Host: Host cannot be set"),
            ("headers: {Content-Length: \"3\"}", [:], "upstreams.tasks.headers.Content-Length: Content-Length cannot be set"),
            ("headers: {traceparent: x}", [:], "upstreams.tasks.headers.traceparent: traceparent cannot be set"),
            ("headers: {\"Bad Name\": x}", [:], "upstreams.tasks.headers.Bad Name: \"Bad Name\" is not a header name"),
            ("headers: {X-Key: \"${NOT_SET_ANYWHERE}\"}", [:], "upstreams.tasks.headers.X-Key: the environment variable NOT_SET_ANYWHERE is not set"),
            ("headers: {X-Key: \"${SPLIT}\"}", ["SPLIT": "a\r\nX-Evil: 1"], "upstreams.tasks.headers.X-Key: the value holds a control character"),
            ("forward: [Connection]", [:], "upstreams.tasks.forward: Connection cannot be set"),
            // Revalidation writes its own validators: a client's or the file's would be answered instead.
            ("forward: [If-None-Match]", [:], "upstreams.tasks.forward: If-None-Match cannot be set"),
            ("headers: {If-Modified-Since: \"Sat, 28 Nov 2026 10:00:00 GMT\"}", [:], "upstreams.tasks.headers.If-Modified-Since: If-Modified-Since cannot be set"),
            ("forward: [Range]", [:], "upstreams.tasks.forward: Range cannot be set"),
            ("forward: [Cookie, cookie]", [:], "upstreams.tasks.forward: names a header twice"),
        ]
        for (headers, environment, expected) in cases {
            let yaml = """
                upstreams:
                  tasks: {url: "http://127.0.0.1:9", \(headers)}
                """
            do {
                _ = try Configuration.load(yaml: yaml, file: "t.yaml", environment: environment)
                Issue.record("accepted: \(headers)")
            } catch {
                #expect(error.description.hasPrefix("t.yaml: " + expected), "\(error.description)")
                #expect(!error.description.contains("X-Evil"), "no value in an error")
            }
        }
    }

    @Test("a configured header's value describes and dumps as <secret>")
    func valueRedacted() throws {
        let configuration = try Configuration.load(
            yaml: "upstreams:\n  tasks: {url: \"http://127.0.0.1:9\", headers: {X-Key: \"${K}\"}}", file: "t.yaml",
            environment: ["K": Self.secret])
        let settings = try #require(configuration.upstreams["tasks"])
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in ["\(settings)", "\(configuration)", String(reflecting: settings), dumped] {
            #expect(!text.contains(Self.secret))
        }
        #expect("\(settings.headers)".contains("X-Key: <secret>"))
    }
}

/// Parameter values and identities across a fleet: each key's pipeline is one for the whole
/// fleet (its lease and channel named by a digest of the key), and no replica's subscriber
/// ever gets another identity's or another value's document.
@Suite("The fleet keys its pipelines by parameters and identity")
struct FleetSharingKeyTests {
    static func yaml(upstream: String, teams: String) -> String {
        """
        server: {workers: 1}
        cluster: {leaseTTL: 1s}
        upstreams:
          tasks: {url: "\(upstream)", timeout: 5s, retries: 0, forward: [Authorization]}
          teams: {url: "\(teams)", timeout: 5s, retries: 0}
        resources:
          groups:
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
            refreshInterval: 1h
          teamgroups:
            kind: list
            upstream: teams
            route: /teams/{team}/groups
            parameters: {team: {pattern: "^[a-z]+$"}}
            list: {path: "/teams/{team}/groups", items: result, id: id}
            details: {path: "/teams/{team}/groups/{id}/metadata", value: result}
            refreshInterval: 1h
        """
    }

    @Test("two replicas: one pipeline per identity and per team for the fleet, each stream its own key's document, no value or identity named in Redis")
    func twoReplicas() async throws {
        let upstream = try await IdentityTests.PerUserUpstream()
        let teams = try await ScriptedUpstream.start { ParameterizedResourceTests.Teams.reply(to: $0, listDelay: .zero) }
        let redis = try await RedisServerProcess.start()
        var replicas: [ServiceProcess] = []
        for _ in 0..<2 {
            replicas.append(try await ServiceProcess(
                yaml: Self.yaml(upstream: upstream.server.baseURL, teams: teams.baseURL), arguments: ["--redis", redis.url],
                environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret]))
        }
        for replica in replicas {
            #expect(await TestHTTP.ready(port: replica.port), "in the fleet")
        }
        var streams: [(owner: String, stream: SSEClient)] = []
        for (replica, owner, headers) in [(0, "alice", IdentityTests.alice), (1, "alice", IdentityTests.alice), (1, "bob", IdentityTests.bob)] {
            streams.append((owner, try await SSEClient(port: replicas[replica].port, path: "/groups", headers: headers)))
        }
        for (owner, stream) in streams {
            #expect(try await stream.next(type: "snapshot").data == IdentityTests.PerUserUpstream.document(owner), "\(owner)")
        }
        let core = [try await SSEClient(port: replicas[0].port, path: "/teams/core/groups"),
                    try await SSEClient(port: replicas[1].port, path: "/teams/core/groups")]
        let web = try await SSEClient(port: replicas[1].port, path: "/teams/web/groups")
        let webID = try await web.announcedID()
        for stream in core { #expect(try await stream.next(type: "snapshot").data == ParameterizedResourceTests.Teams.document(team: "core", status: "-", tag: "-")) }
        #expect(try await web.next(type: "snapshot").data == ParameterizedResourceTests.Teams.document(team: "web", status: "-", tag: "-"))

        // A refresh of every pipeline of the resource: one list call per identity for the fleet.
        let before = upstream.server.requests.filter { $0.path == "/groups" }.count
        upstream.version.update { $0 = 1 }
        #expect(try await TestHTTP.request(port: replicas[1].port, "POST", "/groups/reload").status == 202)
        for (owner, stream) in streams {
            #expect(try await stream.next(type: "snapshot").data == IdentityTests.PerUserUpstream.document(owner, version: 1), "\(owner)")
        }
        let lists = upstream.server.requests.filter { $0.path == "/groups" }.count - before
        #expect(lists == 2, "alice's and bob's pipelines each refreshed once for both replicas")
        #expect(upstream.callsCarriedTheirOwners)
        #expect(teams.requests.filter { $0.uri.hasSuffix("/groups") }.count == 2, "one pipeline for team core in the fleet, one for web")

        // A stream's own reload trigger reaches its key's pipeline, wherever in the fleet it runs
        // (the reload names the pipeline by the key's digest), and only that one.
        let webLists: @Sendable ([RecordedRequest]) -> Int = { $0.filter { $0.uri.hasSuffix("/teams/web/groups") }.count }
        #expect(webLists(teams.requests) == 1)
        #expect(try await TestHTTP.request(port: replicas[0].port, "POST", "/streams/\(webID)/triggers/reload").status == 202)
        #expect(await teams.records.wait(timeout: .seconds(5)) { webLists($0) == 2 }, "the web pipeline refreshed once")
        #expect(teams.requests.filter { $0.uri.hasSuffix("/teams/core/groups") }.count == 1, "core's did not")

        let client = try await RawRedisClient(port: redis.port)
        guard case .array(let keys?) = try await client.command("KEYS", "*") else { Issue.record("no keys"); return }
        let names = keys.compactMap(\.text)
        #expect(names.contains { $0.contains(":lease:groups:") }, "identities' pipelines have leases: \(names)")
        for secret in ["alice", "bob", "core", "web", "Bearer"] { #expect(!names.contains { $0.contains(secret) }, "\(secret) in \(names)") }
        client.close()
        for (_, stream) in streams { stream.close() }
        for stream in core + [web] { stream.close() }
        for replica in replicas { _ = await replica.terminate() }
        redis.stop()
        await teams.shutdown()
        await upstream.server.shutdown()
    }
}
