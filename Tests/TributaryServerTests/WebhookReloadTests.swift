import Foundation
import Testing
import TributaryTesting

/// `deploy/nginx/webhook-reload.conf.template` (docs/operations.md, "Pointing a webhook at a
/// reload"), run by Debian's real nginx beside the deployment template, in front of a worker
/// that requires the admin token: a GitLab hook's `POST /hooks/gitlab/teams/<team>` with its
/// secret token becomes that team's aimed reload, with the admin token added; anything else
/// reloads nothing.
@Suite("A webhook pointed at a reload through nginx")
struct WebhookReloadTests {
    static let admin = "5f0c2b8e4a1d7c3e9b6a0d2f4c8e1a3b"
    static let secret = "9d4b1e7a3c0f5e2d8b6a4c1e9f3d7b0a"
    static let template = NginxProcess.deployFile("webhook-reload.conf.template")

    @Test("a hook's POST with its secret token reloads its team's pipeline with the admin token; a wrong or missing token, another method or path, reloads nothing")
    func hookReloadsItsTeam() async throws {
        // The shipped configuration's name for the resource at /teams/{team}/groups, which the rule reloads.
        let world = try await AimedReloadTests.World.start(groups: "teamgroups", extra: "server: {adminToken: \(Self.admin)}")
        let (upstream, service) = (world.upstream, world.service)
        let nginx = try await NginxProcess.start(
            replicas: [service.port], alongside: [Self.template],
            variables: ["TRIBUTARY_WEBHOOK_SECRET": Self.secret, "TRIBUTARY_ADMIN_TOKEN": Self.admin], listening: ["NGINX_WEBHOOK_LISTEN"])
        let hooks = try #require(nginx.ports["NGINX_WEBHOOK_LISTEN"])
        let (core, web) = try await AimedReloadTests.coreAndWeb(on: service.port)

        // What GitLab sends: its event, its token, its JSON payload.
        func hook(_ path: String, method: String = "POST", token: String? = Self.secret, payload: [UInt8] = Array(#"{"object_kind":"push"}"#.utf8)) async throws -> TestResponse {
            var headers = [("X-Gitlab-Event", "Push Hook"), ("Content-Type", "application/json")]
            if let token { headers.append(("X-Gitlab-Token", token)) }
            return try await TestHTTP.request(port: hooks, method, path, headers: headers, body: method == "POST" ? payload : [])
        }
        for (path, method, token, status) in [
            ("/hooks/gitlab/teams/core", "POST", "wrong-token", 403), ("/hooks/gitlab/teams/core", "POST", nil, 403),
            ("/hooks/gitlab/teams/core", "GET", Self.secret, 403), ("/hooks/gitlab/teams/Core", "POST", Self.secret, 404),
            ("/hooks/gitlab/teams/core/x", "POST", Self.secret, 404), ("/teamgroups/reload?team=core", "POST", Self.secret, 404),
        ] as [(String, String, String?, Int)] {
            #expect(try await hook(path, method: method, token: token).status == status, "\(method) \(path) \(token ?? "no token")")
        }
        upstream.version.update { $0 = 2 }
        // A big push: more than nginx's default 1 MiB body limit.
        let push = Array(#"{"object_kind":"push","commits":[""#.utf8) + [UInt8](repeating: UInt8(ascii: "x"), count: 2 << 20) + Array(#""]}"#.utf8)
        let answer = try await hook("/hooks/gitlab/teams/core", payload: push)
        #expect(answer.status == 202, "\(answer.text)")
        #expect(answer.text == #"{"reloaded":1}"#, "the replica's answer: the admin token was added, the team became the aim")
        #expect(try await core.next(type: "snapshot").data == AimedReloadTests.TeamsUpstream.groups("core", version: 2))
        #expect(await upstream.settled("groups", of: "core", at: 2))
        #expect(upstream.lists("groups", of: "core") == 2, "one reload: none of the refused hooks reached the service")
        #expect(upstream.lists("groups", of: "web") == 1)
        // nginx logs a request once it has answered: the line comes when it comes.
        let logged = #""POST /hooks/gitlab/teams/core HTTP/1.1" 202"#
        #expect(await nginx.output.wait(timeout: .seconds(10)) { $0.contains(logged) }, "\(nginx.output.value)")
        #expect(!nginx.output.value.contains(Self.admin) && !nginx.output.value.contains(Self.secret), "no token in nginx's log")
        nginx.stop()
        await world.stop(closing: [core, web])
    }

    @Test("rendered with an empty secret, the rule fails nginx -t: a hook without a token never reloads")
    func emptySecretRefused() async throws {
        let directory = try NginxProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = [directory + "/tributary.conf", directory + "/webhook.conf"]
        var variables = NginxProcess.variables(listenPort: try LoopbackPort.free(), replicas: [9])
        variables["NGINX_WEBHOOK_LISTEN"] = "127.0.0.1:\(try LoopbackPort.free())"
        variables["TRIBUTARY_ADMIN_TOKEN"] = Self.admin
        for (secret, verdict) in [(Self.secret, true), ("", false)] {
            variables["TRIBUTARY_WEBHOOK_SECRET"] = secret
            for (file, template) in zip(files, [NginxProcess.deployTemplate, Self.template]) {
                try NginxProcess.render(try String(contentsOf: template, encoding: .utf8), with: variables)
                    .write(toFile: file, atomically: true, encoding: .utf8)
            }
            try NginxProcess.mainConfiguration(directory: directory, including: files)
                .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let check = await NginxProcess.check(configuration: directory + "/nginx.conf", prefix: directory)
            #expect(check.passed == verdict, "secret \"\(secret)\": \(check.output)")
            if !verdict { #expect(check.output.contains("conflicting parameter")) }
        }
    }
}
