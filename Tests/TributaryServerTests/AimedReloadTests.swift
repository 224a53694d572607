@testable import Fleet
import HTTPCore
import Testing
import TributaryConfiguration
@testable import TributaryServer
import TributaryTesting

/// `POST /{resource}/reload?team=core` (DESIGN, part 4: "An upstream asked less"): only the
/// live pipelines whose parameter values hold every one given are refreshed, every identity's,
/// and the answer says how many (`{"reloaded":N}`). Against a real worker and a scripted
/// upstream whose documents name the team and a version the test bumps before each reload:
/// a pipeline refreshed shows the new version, and the upstream's recorded calls say which
/// pipelines called again.
@Suite("Aimed reloads: only the pipelines of the parameter values given")
struct AimedReloadTests {
    /// The upstream: `/teams/{team}/groups` (one group whose document names the team and the
    /// version), its details (`owner`: the `Authorization` the call carried, `-` without),
    /// `/teams/{team}/topics` and their media pages, for a `kind: pages` resource.
    final class TeamsUpstream: Sendable {
        let server: ScriptedUpstream
        let version = Observed(1)

        init() async throws {
            let version = self.version
            server = try await ScriptedUpstream.start { request in Self.reply(to: request, version: version.value) }
        }

        static func reply(to request: RecordedRequest, version: Int) -> UpstreamReply {
            let segments = ParameterizedResourceTests.Teams.parts(of: request.uri).segments
            guard segments.count >= 3, segments[0] == "teams" else { return .json("{}", status: 404) }
            let item = #"{"id":"g1","name":"# + JSONWriter.string(segments[1]) + #","version":\#(version)}"#
            switch (segments.count, segments[2]) {
            case (3, "groups"), (3, "topics"): return .json(#"{"result":["# + item + "]}")
            case (5, "groups"): return .json(#"{"result":{"owner":"# + JSONWriter.string(request.header("Authorization") ?? "-") + "}}")
            case (5, "topics"): return .json(#"{"result":[{"id":"m1"}],"next":null}"#)
            default: return .json("{}", status: 404)
            }
        }

        /// What `GET /teams/{team}/groups` answers at `version`, for `owner`'s calls.
        static func groups(_ team: String, version: Int, owner: String = "-") -> String {
            #"[{"id":"g1","name":"# + JSONWriter.string(team) + #","version":\#(version),"owner":"# + JSONWriter.string(owner) + "}]"
        }

        /// The list calls (`groups` or `topics`) for `team` in `requests` (the team compared by
        /// its bytes: Swift's `==` takes é and e + U+0301 for one).
        static func lists(_ kind: String, of team: String, in requests: [RecordedRequest]) -> Int {
            requests.filter { request in
                let segments = ParameterizedResourceTests.Teams.parts(of: request.uri).segments
                return segments.count == 3 && segments[0] == "teams" && segments[1].utf8.elementsEqual(team.utf8) && segments[2] == kind
            }.count
        }

        func lists(_ kind: String, of team: String) -> Int { Self.lists(kind, of: team, in: server.requests) }

        /// Waits (≤ 10 s) until `team` had `count` list calls of `kind` and no call is in flight.
        func settled(_ kind: String, of team: String, at count: Int) async -> Bool {
            await server.records.wait(timeout: .seconds(10)) { requests in
                Self.lists(kind, of: team, in: requests) >= count && requests.allSatisfy { !$0.inFlight }
            }
        }
    }

    /// `groups` (at `/teams/{team}/groups`, named `groups` unless told), per-identity
    /// `mygroups` and `kind: pages` `rows`, all per team, of a ``TeamsUpstream``; `extra` is
    /// more top-level YAML.
    static func yaml(upstream: String, groups: String = "groups", extra: String = "") -> String {
        """
        upstreams:
          tasks: {url: "\(upstream)", timeout: 5s, retries: 0}
          accounts: {url: "\(upstream)", timeout: 5s, retries: 0, forward: [Authorization]}
        resources:
          \(groups):
            kind: list
            upstream: tasks
            route: /teams/{team}/groups
            parameters:
              team: {pattern: "^[^A-Z]{1,40}$"}
              status: {in: query, enum: [open, done], default: open}
            list: {path: "/teams/{team}/groups?status={status}", items: result, id: id}
            details: {path: "/teams/{team}/groups/{id}/metadata", value: result}
            refreshInterval: 1h
          mygroups:
            kind: list
            upstream: accounts
            route: /my/teams/{team}/groups
            parameters: {team: {pattern: "^[a-z]{1,40}$"}}
            list: {path: "/teams/{team}/groups", items: result, id: id}
            details: {path: "/teams/{team}/groups/{id}/metadata", value: result}
            refreshInterval: 1h
          rows:
            kind: pages
            upstream: tasks
            route: /teams/{team}/rows
            parameters: {team: {pattern: "^[a-z]{1,40}$"}}
            list: {path: "/teams/{team}/topics", items: result}
            pages: {path: "/teams/{team}/topics/{id}/medias", items: result, cursor: next, parameter: page}
            row: {item: topic, pages: medias}
        \(extra)
        """
    }

    /// A worker of ``yaml(upstream:groups:extra:)`` in front of a ``TeamsUpstream``.
    struct World {
        let upstream: TeamsUpstream
        let service: ServiceHarness

        static func start(groups: String = "groups", extra: String = "") async throws -> World {
            let upstream = try await TeamsUpstream()
            let service = try await ServiceHarness(yaml: AimedReloadTests.yaml(upstream: upstream.server.baseURL, groups: groups, extra: extra))
            return World(upstream: upstream, service: service)
        }

        func stop(closing streams: [SSEClient]) async {
            for stream in streams { stream.close() }
            await service.stop()
            await upstream.server.shutdown()
        }
    }

    /// Streams of core's and web's groups on `port`, each past its first document.
    static func coreAndWeb(on port: UInt16) async throws -> (core: SSEClient, web: SSEClient) {
        let core = try await SSEClient(port: port, path: "/teams/core/groups")
        let web = try await SSEClient(port: port, path: "/teams/web/groups")
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 1))
        #expect(try await web.next(type: "snapshot").data == TeamsUpstream.groups("web", version: 1))
        return (core, web)
    }

    /// `POST path` on `port`: the answer, which must be 202 `{"reloaded":N}`, and N.
    static func reload(_ path: String, port: UInt16, headers: [(String, String)] = []) async throws -> Int? {
        let answer = try await TestHTTP.request(port: port, "POST", path, headers: headers)
        #expect(answer.status == 202, "\(path): \(answer.text)")
        #expect(answer.header("Content-Type") == "application/json")
        #expect(answer.header("Cache-Control") == "no-store")
        guard let match = answer.text.wholeMatch(of: /\{"reloaded":(\d+)\}/) else {
            Issue.record("\(path): \(answer.text)")
            return nil
        }
        return Int(match.1)
    }

    @Test("two teams' streams: a reload aimed at core refreshes core's pipeline only and answers {\"reloaded\":1}; status narrows too, none given reloads both")
    func onlyTheAimedPipeline() async throws {
        let world = try await World.start()
        let (upstream, service) = (world.upstream, world.service)
        let (core, web) = try await Self.coreAndWeb(on: service.port)

        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/groups/reload?team=core", port: service.port) == 1)
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 2))
        // Once more: a refresh of web's that the first reload started would have started on
        // the pipelines' loop before this reload was even read, so its call is in by the
        // time this one's has been answered.
        upstream.version.update { $0 = 3 }
        #expect(try await Self.reload("/groups/reload?team=core&status=open", port: service.port) == 1)
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 3))
        #expect(await upstream.settled("groups", of: "core", at: 3))
        #expect(upstream.lists("groups", of: "core") == 3, "core's pipeline called again for each reload aimed at it")
        #expect(upstream.lists("groups", of: "web") == 1, "web's did not")

        #expect(try await Self.reload("/groups/reload?status=done", port: service.port) == 0, "no pipeline of status done")
        upstream.version.update { $0 = 4 }
        #expect(try await Self.reload("/groups/reload", port: service.port) == 2, "without parameters: every pipeline, as before")
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 4))
        #expect(try await web.next(type: "snapshot").data == TeamsUpstream.groups("web", version: 4))
        await world.stop(closing: [core, web])
    }

    @Test("a reload aimed at a team refreshes that team's pipeline of every identity, and another team's of none")
    func everyIdentity() async throws {
        let world = try await World.start()
        let (upstream, service) = (world.upstream, world.service)
        var streams: [(owner: String, team: String, stream: SSEClient)] = []
        for (owner, team) in [("alice", "core"), ("bob", "core"), ("alice", "web")] {
            let stream = try await service.events("/my/teams/\(team)/groups", headers: [("Authorization", "Bearer \(owner)")])
            #expect(try await stream.next(type: "snapshot").data == TeamsUpstream.groups(team, version: 1, owner: "Bearer \(owner)"))
            streams.append((owner, team, stream))
        }
        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/mygroups/reload?team=core", port: service.port) == 2, "alice's and bob's pipelines of core")
        for (owner, team, stream) in streams where team == "core" {
            #expect(try await stream.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 2, owner: "Bearer \(owner)"), "\(owner)")
        }
        upstream.version.update { $0 = 3 }
        #expect(try await Self.reload("/mygroups/reload?team=core", port: service.port) == 2)
        for (owner, team, stream) in streams where team == "core" {
            #expect(try await stream.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 3, owner: "Bearer \(owner)"), "\(owner)")
        }
        #expect(await upstream.settled("groups", of: "core", at: 6))
        #expect(upstream.lists("groups", of: "core") == 6, "one list call per identity at each of three refreshes")
        #expect(upstream.lists("groups", of: "web") == 1, "alice's pipeline of web did not refresh")
        await world.stop(closing: streams.map(\.stream))
    }

    @Test("values are compared by their bytes: é precomposed and e + combining acute are two pipelines, and a reload aims at one")
    func byteForByte() async throws {
        let world = try await World.start()
        let (upstream, service) = (world.upstream, world.service)
        let (composed, decomposed) = ("\u{E9}", "e\u{301}")
        #expect(composed == decomposed, "one string to Swift's ==")
        let streams = [try await service.events("/teams/%C3%A9/groups"), try await service.events("/teams/e%CC%81/groups")]
        #expect(try await streams[0].next(type: "snapshot").data.utf8.elementsEqual(TeamsUpstream.groups(composed, version: 1).utf8))
        #expect(try await streams[1].next(type: "snapshot").data.utf8.elementsEqual(TeamsUpstream.groups(decomposed, version: 1).utf8))
        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/groups/reload?team=%C3%A9", port: service.port) == 1)
        #expect(try await streams[0].next(type: "snapshot").data.utf8.elementsEqual(TeamsUpstream.groups(composed, version: 2).utf8))
        #expect(try await Self.reload("/groups/reload?team=%C3%A9", port: service.port) == 1)
        #expect(await upstream.settled("groups", of: composed, at: 3))
        #expect(upstream.lists("groups", of: composed) == 3)
        #expect(upstream.lists("groups", of: decomposed) == 1, "the other bytes' pipeline did not refresh")
        await world.stop(closing: streams)
    }

    @Test("a parameter not declared, refused by its pattern or enum, given twice, empty, . or .., or access_token: 400 invalid_parameter naming it, and nothing reloads")
    func refusals() async throws {
        let world = try await World.start()
        let (upstream, service) = (world.upstream, world.service)
        let (core, web) = try await Self.coreAndWeb(on: service.port)
        for (query, parameter) in [
            ("tag=x", "tag"), ("fields=id", "fields"), ("team=Core", "team"), ("status=closed", "status"), ("team=core&team=web", "team"),
            ("team=core&team=core", "team"), ("team=", "team"), ("team", "team"), ("team=.", "team"), ("team=..", "team"),
            ("team=core&access_token=secret", "access_token"),
        ] {
            let answer = try await service.post("/groups/reload?\(query)")
            #expect(answer.status == 400, "\(query): \(answer.text)")
            #expect(answer.error?.code == "invalid_parameter", "\(query)")
            #expect(answer.error?.message.hasPrefix("parameter \(parameter) ") == true, "\(query): \(answer.error?.message ?? "")")
            #expect(answer.header("Cache-Control") == "no-store", "\(query)")
            #expect(!answer.text.contains("secret"), "no value echoed")
        }
        #expect(try await service.post("/rows/reload?team=core&tag=x").error?.code == "invalid_parameter", "on a pages resource alike")
        // A reload aimed at core: had any refusal reloaded a pipeline, its call came before this one's.
        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/groups/reload?team=core", port: service.port) == 1)
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 2))
        #expect(await upstream.settled("groups", of: "core", at: 2))
        #expect(upstream.lists("groups", of: "core") == 2, "only the valid reload refreshed core")
        #expect(upstream.lists("groups", of: "web") == 1)
        await world.stop(closing: [core, web])
    }

    @Test("a kind whose streams have pipelines of their own (pages): a reload aimed at a team reloads that team's streams, on their own routes and on /events")
    func streamsWithPipelinesOfTheirOwn() async throws {
        let world = try await World.start()
        let (upstream, service) = (world.upstream, world.service)
        let core = try await service.events("/teams/core/rows")
        let events = try await service.events("/events?resource=rows&rows.team=core")
        let web = try await service.events("/teams/web/rows")
        for stream in [core, events, web] { #expect(try await stream.next(type: "snapshot").data.contains(#""version":1"#)) }
        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/rows/reload?team=core", port: service.port) == 2, "two streams of core, each its own pipeline")
        #expect(try await core.next(type: "snapshot").data.contains(#""name":"core","version":2"#))
        #expect(try await events.next(type: "snapshot").data.contains(#""name":"core","version":2"#))
        #expect(try await Self.reload("/rows/reload?team=core", port: service.port) == 2)
        #expect(await upstream.settled("topics", of: "core", at: 6))
        #expect(upstream.lists("topics", of: "core") == 6, "each of core's two streams listed again at each reload")
        #expect(upstream.lists("topics", of: "web") == 1, "web's stream did not reload")
        await world.stop(closing: [core, events, web])
    }

    @Test("in a fleet, a reload aimed at core on replica A refreshes core's pipeline that replica B runs, not web's; the message carries the values and no credential; one written the old way reloads every pipeline")
    func fleet() async throws {
        let upstream = try await TeamsUpstream()
        let redis = try await RedisServerProcess.start()
        let admin = "admin-token-never-in-redis"
        let yaml = Self.yaml(upstream: upstream.server.baseURL, extra: "server: {workers: 1, adminToken: \(admin)}\ncluster: {leaseTTL: 1s}")
        var replicas: [ServiceProcess] = []
        for _ in 0..<2 {
            replicas.append(try await ServiceProcess(
                yaml: yaml, arguments: ["--redis", redis.url], environment: ["TRIBUTARY_CLUSTER_SECRET": FleetTests.secret]))
        }
        for replica in replicas { #expect(await TestHTTP.ready(port: replica.port), "in the fleet") }
        let (a, b) = (replicas[0].port, replicas[1].port)
        let token = [("Authorization", "Bearer \(admin)")]
        // Only B has streams: B runs both pipelines, A none.
        let (core, web) = try await Self.coreAndWeb(on: b)
        let channel = ClusterKeys(prefix: "tributary", fleet: FleetSeal(secret: try ClusterSecret(FleetTests.secret, at: "test"), maximumAhead: .seconds(1)).fleet).reloads
        let spy = try await RawRedisClient(port: redis.port)
        _ = try await spy.command("SUBSCRIBE", channel)

        upstream.version.update { $0 = 2 }
        #expect(try await Self.reload("/groups/reload?team=core", port: a, headers: token) == 0,
                "A has no pipeline of core: B's is refreshed, and counted by none but B")
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 2))
        let message = String(decoding: try await spy.nextMessage(), as: UTF8.self)
        #expect(message.hasSuffix(#" groups {"team":"core"}"#), "\(message)")
        #expect(!message.contains(admin) && !message.contains("Bearer"), "no credential in the fleet's message")
        upstream.version.update { $0 = 3 }
        #expect(try await Self.reload("/groups/reload?team=core", port: b, headers: token) == 1, "B counts the pipeline its stream follows")
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 3))
        #expect(await upstream.settled("groups", of: "core", at: 3))
        #expect(upstream.lists("groups", of: "core") == 3, "one refresh of core for the fleet per reload")
        #expect(upstream.lists("groups", of: "web") == 1, "web's pipeline did not refresh")

        // A reload as a replica from before aimed reloads writes it: every pipeline of groups.
        upstream.version.update { $0 = 4 }
        let writer = try await RawRedisClient(port: redis.port)
        let old = FleetTrustTests.sealed("0123456789abcdef groups", at: FleetTrustTests.now, for: channel)
        _ = try await writer.command([Array("PUBLISH".utf8), Array(channel.utf8), old])
        #expect(try await core.next(type: "snapshot").data == TeamsUpstream.groups("core", version: 4))
        #expect(try await web.next(type: "snapshot").data == TeamsUpstream.groups("web", version: 4))
        writer.close()
        spy.close()
        core.close()
        web.close()
        for replica in replicas { _ = await replica.terminate() }
        redis.stop()
        await upstream.server.shutdown()
    }
}
