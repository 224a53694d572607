import Aggregation
import Foundation
import HTTPCore
import Testing
import TributaryServer
import TributaryTesting

@Suite("Revalidation: a live pipeline asks its upstream \"changed since?\" and reuses what did not change")
struct RevalidationTests {
    /// Five groups served by a scripted upstream that validates as a real one does: every 200
    /// carries an `ETag` naming its body (and the credentials it was asked with), and a request
    /// whose `If-None-Match` names the current one gets `304` and no body.
    struct World {
        let fixture: Observed<TaskGroupsFixture>
        let upstream: ScriptedUpstream
        let service: ServiceHarness
        /// The upstream's name in the service's configuration: each test its own, so that
        /// its counters in the process-wide metrics are its own.
        let name: String

        static func start(
            _ name: String, groups: Int = 5, upstream extraUpstream: String = "",
            details: String = #"{path: "/groups/{id}/metadata", value: result}"#,
            answer: @escaping @Sendable (RecordedRequest, UpstreamReply) -> UpstreamReply = { validating($1, for: $0) }
        ) async throws -> World {
            let fixture = Observed(TaskGroupsFixture(count: groups))
            let upstream = try await ScriptedUpstream.start { request in
                guard let reply = fixture.value.reply(to: request) else { return .json("{}", status: 404) }
                return answer(request, reply)
            }
            let yaml = """
                upstreams:
                  \(name):
                    url: \(upstream.baseURL)
                    retries: 0
                \(extraUpstream.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
                resources:
                  groups:
                    kind: list
                    upstream: \(name)
                    list: {path: /groups, items: result, id: id}
                    details: \(details)
                    refreshInterval: 1h
                """
            let service = try await ServiceHarness(yaml: yaml)
            return World(fixture: fixture, upstream: upstream, service: service, name: name)
        }

        /// The calls of one refresh: the list and one per group.
        var callsPerRefresh: Int { fixture.value.groups.count + 1 }

        /// Waits until `count` calls were made in all and none is in flight.
        func settled(calls count: Int) async -> Bool {
            await upstream.records.wait(timeout: .seconds(10)) { $0.count >= count && !$0.contains(where: \.inFlight) }
        }

        /// `POST /groups/reload`, then waits for the refresh's calls to end.
        func reload() async throws {
            let before = upstream.requests.count
            #expect(try await service.post("/groups/reload").status == 202)
            #expect(await settled(calls: before + callsPerRefresh), "the refresh made its \(callsPerRefresh) calls")
        }

        /// `tributary_upstream_not_modified_total` of this world's upstream, from `/metrics`;
        /// once it has `reaching` (within 10 s), when given: the upstream has sent its 304s when
        /// its records say so, and the service counts each a moment later, as it reads it.
        func notModified(reaching expected: Int? = nil) async throws -> Int {
            let prefix = #"tributary_upstream_not_modified_total{upstream=""# + name + #""} "#
            let deadline = ContinuousClock.now + .seconds(10)
            while true {
                let text = try await service.get("/metrics").text
                let count = text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
                guard let expected, count < expected, ContinuousClock.now < deadline else { return count }
                try await Task.sleep(for: .milliseconds(10))
            }
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    /// The entity tag of `body` asked with `authorization`: a validator names one answer to one caller.
    static func tag(of body: [UInt8], authorization: String?) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body + Array((authorization ?? "").utf8) {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return "\"" + String(hash, radix: 16) + "\""
    }

    /// `reply` with its `ETag`, or `304` when `request` names it in `If-None-Match`.
    static func validating(_ reply: UpstreamReply, for request: RecordedRequest, headers extra: [(String, String)] = []) -> UpstreamReply {
        guard reply.status == 200 else { return reply }
        let tag = tag(of: reply.body, authorization: request.header("Authorization"))
        if request.header("If-None-Match") == tag { return UpstreamReply(status: 304, headers: [("ETag", tag)] + extra) }
        var reply = reply
        reply.headers += [("ETag", tag)] + extra
        return reply
    }

    /// The tag of the answer to `request` now: what the next call of the same URL should name.
    static func currentTag(of request: RecordedRequest, in fixture: TaskGroupsFixture) -> String? {
        guard let reply = fixture.reply(to: request), reply.status == 200 else { return nil }
        return tag(of: reply.body, authorization: request.header("Authorization"))
    }

    // MARK: - Refreshes

    @Test("a refresh asks with the validator of every earlier answer; all 304: no event; one detail changed: one patch naming it")
    func refreshRevalidates() async throws {
        let world = try await World.start("revalidated")
        let stream = try await world.service.events("/groups?updates=patch")
        let first = try await stream.next(type: "snapshot")
        #expect(try JSON(parsing: Array(first.data.utf8)) == JSON(parsing: Array(world.fixture.value.mergedJSON.utf8)))
        #expect(await world.settled(calls: world.callsPerRefresh))
        let firstCalls = world.upstream.requests
        #expect(firstCalls.allSatisfy { $0.header("If-None-Match") == nil }, "a pipeline's first calls have nothing to revalidate")

        try await world.reload()
        let refresh = Array(world.upstream.requests.dropFirst(firstCalls.count))
        #expect(Set(refresh.map(\.uri)) == Set(firstCalls.map(\.uri)), "the refresh repeats the list and every detail call")
        for call in refresh {
            #expect(call.header("If-None-Match") == Self.currentTag(of: call, in: world.fixture.value), "GET \(call.uri) named its earlier answer")
        }
        #expect(try await world.notModified(reaching: world.callsPerRefresh) == world.callsPerRefresh)

        // A refresh whose 304s sent nothing: the next event is the change below.
        let changed = world.fixture.value.groups[1].id
        world.fixture.update { $0.groups[1].taskCount = 4242 }
        try await world.reload()
        let patch = try await stream.next()
        #expect(patch.type == "patch")
        #expect(patch.data == #"[{"op":"replace","path":"/1/taskCount","value":4242}]"#)
        // Only the changed detail came whole: the list and the other details were 304s.
        #expect(try await world.notModified(reaching: 2 * world.callsPerRefresh - 1) == 2 * world.callsPerRefresh - 1)
        let answer = try await world.service.get("/groups")
        #expect(try JSON(parsing: answer.body) == JSON(parsing: Array(world.fixture.value.mergedJSON.utf8)))
        #expect(answer.header("ETag") == "\"\(patch.id ?? "")\"", "the stream's version is the fresh GET's")
        #expect(world.upstream.requests.contains { $0.path == "/groups/\(changed)/metadata" })
        stream.close()
        await world.stop()
    }

    @Test("one-shot JSON GETs ask plainly, and a 304 to a call that sent no validator fails it")
    func oneShotAnswersAskPlainly() async throws {
        let world = try await World.start("plain")
        #expect(try await world.service.get("/groups").status == 200)
        #expect(try await world.service.get("/groups").status == 200)
        #expect(world.upstream.requests.count == 2 * world.callsPerRefresh)
        #expect(world.upstream.requests.allSatisfy { $0.header("If-None-Match") == nil && $0.header("If-Modified-Since") == nil })
        await world.stop()

        let unasked = try await World.start("unasked304") { request, reply in
            request.path == "/groups" ? UpstreamReply(status: 304, headers: [("ETag", "\"x\"")]) : reply
        }
        let refused = try await unasked.service.get("/groups")
        #expect(refused.status == 502)
        #expect(refused.error?.code == "upstream_status")
        #expect(try await unasked.notModified() == 0)
        await unasked.stop()
    }

    @Test("an upstream that refuses conditional calls (412): the call goes again at once without validators, the stream goes on")
    func refusedConditionalCalls() async throws {
        let world = try await World.start("refusing") { request, reply in
            if request.path == "/groups", request.header("If-None-Match") != nil { return .json("{}", status: 412) }
            return Self.validating(reply, for: request)
        }
        let stream = try await world.service.events("/groups?updates=patch")
        _ = try await stream.next(type: "snapshot")
        #expect(await world.settled(calls: world.callsPerRefresh))
        world.fixture.update { $0.groups[4].taskCount = 808 }
        let before = world.upstream.requests.count
        #expect(try await world.service.post("/groups/reload").status == 202)
        #expect(try await stream.next().data == #"[{"op":"replace","path":"/4/taskCount","value":808}]"#)
        let lists = world.upstream.requests.dropFirst(before).filter { $0.path == "/groups" }
        #expect(lists.map { $0.header("If-None-Match") != nil } == [true, false], "refused conditionally, then asked plainly")
        stream.close()
        await world.stop()
    }

    @Test("revalidate: false: a refresh asks plainly and reads every answer whole")
    func revalidationOff() async throws {
        let world = try await World.start("unrevalidated", upstream: "revalidate: false")
        let stream = try await world.service.events("/groups")
        _ = try await stream.next(type: "snapshot")
        #expect(await world.settled(calls: world.callsPerRefresh))
        try await world.reload()
        #expect(world.upstream.requests.allSatisfy { $0.header("If-None-Match") == nil })
        #expect(try await world.notModified() == 0)
        stream.close()
        await world.stop()
    }

    @Test("Last-Modified alone: a refresh asks If-Modified-Since with it")
    func lastModifiedValidates() async throws {
        let date = "Sat, 28 Nov 2026 10:00:00 GMT"
        let world = try await World.start("dated") { request, reply in
            guard reply.status == 200 else { return reply }
            if request.header("If-Modified-Since") == date { return UpstreamReply(status: 304) }
            var reply = reply
            reply.headers.append(("Last-Modified", date))
            return reply
        }
        let stream = try await world.service.events("/groups")
        _ = try await stream.next(type: "snapshot")
        #expect(await world.settled(calls: world.callsPerRefresh))
        try await world.reload()
        let refresh = world.upstream.requests.dropFirst(world.callsPerRefresh)
        #expect(refresh.allSatisfy { $0.header("If-Modified-Since") == date && $0.header("If-None-Match") == nil })
        #expect(try await world.notModified(reaching: world.callsPerRefresh) == world.callsPerRefresh)
        stream.close()
        await world.stop()
    }

    // MARK: - Keys

    @Test("validators never cross identities: each identity's refresh names its own answers")
    func validatorsPerIdentity() async throws {
        let world = try await World.start("perIdentity", upstream: "forward: [Authorization]")
        let alice = try await world.service.events("/groups", headers: [("Authorization", "Bearer alice")])
        _ = try await alice.next(type: "snapshot")
        #expect(await world.settled(calls: world.callsPerRefresh))
        let bob = try await world.service.events("/groups", headers: [("Authorization", "Bearer bob")])
        _ = try await bob.next(type: "snapshot")
        #expect(await world.settled(calls: 2 * world.callsPerRefresh))
        let bobsFirst = world.upstream.requests.filter { $0.header("Authorization") == "Bearer bob" }
        #expect(bobsFirst.count == world.callsPerRefresh)
        #expect(bobsFirst.allSatisfy { $0.header("If-None-Match") == nil }, "bob's first calls name none of alice's answers")

        let before = world.upstream.requests.count
        #expect(try await world.service.post("/groups/reload").status == 202)
        #expect(await world.settled(calls: before + 2 * world.callsPerRefresh))
        let refresh = world.upstream.requests.dropFirst(before)
        for call in refresh {
            #expect(call.header("If-None-Match") == Self.currentTag(of: call, in: world.fixture.value), "\(call.header("Authorization") ?? "") GET \(call.uri)")
        }
        #expect(try await world.notModified(reaching: 2 * world.callsPerRefresh) == 2 * world.callsPerRefresh)
        alice.close()
        bob.close()
        await world.stop()
    }

    @Test("two pipelines sharing a detail call: the one that hears 304 to the other's newer answer still sends the change")
    func sharedDetailCalls() async throws {
        // Two teams' lists, whose details are the same calls (the team is not in their path):
        // whichever pipeline refreshes second gets a 304 naming the answer the first just kept.
        let world = try await World.start("sharedDetails")
        await world.service.stop()
        let service = try await ServiceHarness(yaml: """
            upstreams:
              sharedDetails: {url: \(world.upstream.baseURL), retries: 0}
            resources:
              teamgroups:
                kind: list
                upstream: sharedDetails
                route: /teams/{team}/groups
                parameters: {team: {pattern: "^[a-z]+$"}}
                list: {path: "/groups?team={team}", items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
                refreshInterval: 1h
            """)
        let core = try await service.events("/teams/core/groups?updates=patch")
        let coreID = try await core.announcedID()
        _ = try await core.next(type: "snapshot")
        let web = try await service.events("/teams/web/groups?updates=patch")
        let webID = try await web.announcedID()
        _ = try await web.next(type: "snapshot")
        #expect(await world.settled(calls: 2 * world.callsPerRefresh))
        world.fixture.update { $0.groups[0].taskCount = 31_337 }
        let expected = #"[{"op":"replace","path":"/0/taskCount","value":31337}]"#
        // core first: its call of the changed detail keeps the new answer...
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(coreID)/triggers/reload").status == 202)
        #expect(try await core.next().data == expected)
        #expect(await world.settled(calls: 3 * world.callsPerRefresh))
        // ...then web, whose every call is now a 304, that one naming core's answer.
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(webID)/triggers/reload").status == 202)
        #expect(await world.settled(calls: 4 * world.callsPerRefresh))
        #expect(world.upstream.requests.suffix(world.callsPerRefresh).allSatisfy {
            $0.header("If-None-Match") == Self.currentTag(of: $0, in: world.fixture.value)
        })
        #expect(try await web.next().data == expected)
        core.close()
        web.close()
        await service.stop()
        await world.upstream.shutdown()
    }

    @Test("batch calls revalidate: unchanged, a 304 keeps every item; one detail changed, one patch")
    func batchesRevalidate() async throws {
        let world = try await World.start(
            "batched", details: "{value: result, batch: {path: /groups/metadata, parameter: ids, style: comma, max: 10, items: result, id: id}}")
        let stream = try await world.service.events("/groups?updates=patch")
        let first = try await stream.next(type: "snapshot")
        #expect(try JSON(parsing: Array(first.data.utf8)) == JSON(parsing: Array(world.fixture.value.mergedJSON.utf8)))
        #expect(await world.settled(calls: 2))
        let before = world.upstream.requests.count
        #expect(try await world.service.post("/groups/reload").status == 202)
        #expect(await world.settled(calls: before + 2))
        let refresh = world.upstream.requests.dropFirst(before)
        #expect(refresh.map(\.path).sorted() == ["/groups", "/groups/metadata"])
        for call in refresh {
            #expect(call.header("If-None-Match") == Self.currentTag(of: call, in: world.fixture.value), "GET \(call.uri)")
        }
        #expect(try await world.notModified(reaching: 2) == 2)

        world.fixture.update { $0.groups[3].taskCount = 77 }
        #expect(try await world.service.post("/groups/reload").status == 202)
        let patch = try await stream.next()
        #expect(patch.data == #"[{"op":"replace","path":"/3/taskCount","value":77}]"#)
        #expect(try await world.notModified(reaching: 3) == 3, "the list again, not the changed batch")
        stream.close()
        await world.stop()
    }

    @Test("a live view's reload revalidates its pages: the list and every topic's first page")
    func pagesRevalidate() async throws {
        let media = Observed(MediaFixture(topics: ["a", "b"]))
        let upstream = try await ScriptedUpstream.start { request in
            guard let reply = media.value.reply(to: request) else { return .json("{}", status: 404) }
            guard reply.status == 200 else { return reply }
            let tag = Self.tag(of: reply.body, authorization: nil)
            if request.header("If-None-Match") == tag { return UpstreamReply(status: 304, headers: [("ETag", tag)]) }
            var answer = reply
            answer.headers.append(("ETag", tag))
            return answer
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.viewModelsYAML(upstream: upstream.baseURL))
        let stream = try await service.events("/rows")
        let id = try await stream.announcedID()
        #expect(try await stream.next(type: "snapshot").data == media.value.rowsJSON())
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 3 && !$0.contains(where: \.inFlight) })
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/reload").status == 202)
        #expect(await upstream.records.wait(timeout: .seconds(10)) { $0.count == 6 && !$0.contains(where: \.inFlight) })
        let reloaded = upstream.requests.dropFirst(3)
        #expect(reloaded.allSatisfy { $0.header("If-None-Match") != nil }, "\(reloaded.map { "\($0.uri): \($0.header("If-None-Match") ?? "-")" })")
        // The reload's 304s sent no snapshot; once its rows are read again (row b's first page
        // with them), loadMore is taken: 409 `not_ready` until then.
        var loaded = 409
        let deadline = ContinuousClock.now + .seconds(10)
        while loaded == 409, ContinuousClock.now < deadline {
            loaded = try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/loadMore?topic=b").status
            if loaded == 409 { try await Task.sleep(for: .milliseconds(10)) }
        }
        #expect(loaded == 202)
        #expect(try await stream.next(type: "snapshot").data == media.value.rowsJSON(loaded: ["b": 2]), "the 304s kept the rows as they were")
        stream.close()
        await service.stop()
        await upstream.shutdown()
    }

    // MARK: - The detail cache

    @Test("details.cacheFor: upstream follows each answer's Cache-Control; expired details are revalidated")
    func detailCacheFollowsUpstream() async throws {
        // Group 0: max-age=3600 (fresh); 1: no-cache (revalidated every use); 2: no-store
        // (never kept); 3: max-age=3600 with Age 3600 (stale at once); 4: no Cache-Control.
        let world = try await World.start("freshness", details: #"{path: "/groups/{id}/metadata", value: result, cacheFor: upstream}"#) { request, reply in
            let groups = TaskGroupsFixture(count: 5).groups
            let index = groups.firstIndex { "/groups/\($0.id)/metadata" == request.path }
            let headers: [(String, String)] = switch index {
            case 0: [("Cache-Control", "max-age=3600")]
            case 1: [("Cache-Control", "no-cache")]
            case 2: [("Cache-Control", "no-store")]
            case 3: [("Cache-Control", "public, max-age=3600"), ("Age", "3600")]
            default: []
            }
            return Self.validating(reply, for: request, headers: headers)
        }
        let groups = world.fixture.value.groups
        #expect(try await world.service.get("/groups").status == 200)
        #expect(await world.settled(calls: world.callsPerRefresh))
        let answer = try await world.service.get("/groups")
        #expect(try JSON(parsing: answer.body) == JSON(parsing: Array(world.fixture.value.mergedJSON.utf8)))
        #expect(await world.settled(calls: 2 * world.callsPerRefresh - 1))
        let second = world.upstream.requests.dropFirst(world.callsPerRefresh)
        let asked: [String: String?] = Dictionary(second.map { ($0.path, $0.header("If-None-Match")) }, uniquingKeysWith: { first, _ in first })
        #expect(asked["/groups/\(groups[0].id)/metadata"] == nil, "fresh for its max-age: not asked")
        #expect(asked["/groups/\(groups[1].id)/metadata"]! != nil, "no-cache: revalidated")
        #expect(asked["/groups/\(groups[2].id)/metadata"]! == nil, "no-store: asked plainly, nothing was kept")
        #expect(asked["/groups/\(groups[3].id)/metadata"]! != nil, "Age as old as max-age: revalidated")
        #expect(asked["/groups/\(groups[4].id)/metadata"]! != nil, "no max-age: revalidated")
        #expect(asked["/groups"]! == nil, "a one-shot answer's list is asked plainly")
        #expect(try await world.notModified(reaching: 3) == 3)
        await world.stop()
    }

    // MARK: - A real upstream

    @Test("nginx serving static files: a refresh of unchanged files is all 304s; a changed file is one patch")
    func nginxRevalidates() async throws {
        let fixture = TaskGroupsFixture(count: 6)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-revalidation-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/groups", withIntermediateDirectories: true)
        try fixture.listJSON.write(toFile: root + "/groups.json", atomically: true, encoding: .utf8)
        for group in fixture.groups {
            try FileManager.default.createDirectory(atPath: root + "/groups/\(group.id)", withIntermediateDirectories: true)
            try fixture.metadataJSON(for: group).write(toFile: root + "/groups/\(group.id)/metadata.json", atomically: true, encoding: .utf8)
        }
        let template = root + "/static.conf.template"
        try """
            server {
                listen ${NGINX_LISTEN};
                access_log ${NGINX_ACCESS_LOG};
                root \(root);
                default_type application/json;
                location / { }
            }
            """.write(toFile: template, atomically: true, encoding: .utf8)
        let nginx = try await NginxProcess.start(replicas: [], template: URL(fileURLWithPath: template))
        defer { nginx.stop() }
        let service = try await ServiceHarness(yaml: """
            upstreams:
              static:
                url: http://127.0.0.1:\(nginx.port)
            resources:
              groups:
                kind: list
                upstream: static
                list: {path: /groups.json, items: result, id: id}
                details: {path: "/groups/{id}/metadata.json", value: result}
                refreshInterval: 1h
            """)
        let stream = try await service.events("/groups?updates=patch")
        let first = try await stream.next(type: "snapshot")
        #expect(try JSON(parsing: Array(first.data.utf8)) == JSON(parsing: Array(fixture.mergedJSON.utf8)))

        func notModified() async throws -> Int {
            let prefix = #"tributary_upstream_not_modified_total{upstream="static"} "#
            return try await service.get("/metrics").text.split(separator: "\n").first { $0.hasPrefix(prefix) }
                .flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
        }
        func awaitNotModified(_ count: Int) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                if try await notModified() >= count { return true }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
        #expect(try await service.post("/groups/reload").status == 202)
        #expect(try await awaitNotModified(fixture.groups.count + 1), "nginx answered every call of the refresh 304")

        // A changed file (another size, so another ETag whatever its mtime) is one patch.
        var changed = fixture
        changed.groups[2].taskCount = 123_456
        try changed.metadataJSON(for: changed.groups[2]).write(
            toFile: root + "/groups/\(changed.groups[2].id)/metadata.json", atomically: true, encoding: .utf8)
        #expect(try await service.post("/groups/reload").status == 202)
        let patch = try await stream.next()
        #expect(patch.type == "patch")
        #expect(patch.data == #"[{"op":"replace","path":"/2/taskCount","value":123456}]"#)
        #expect(try await awaitNotModified(2 * (fixture.groups.count + 1) - 1))
        #expect(try await notModified() == 2 * (fixture.groups.count + 1) - 1)
        let fresh = try await service.get("/groups")
        #expect(try JSON(parsing: fresh.body) == JSON(parsing: Array(changed.mergedJSON.utf8)))
        stream.close()
        await service.stop()
    }
}
