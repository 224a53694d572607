import Testing
import TributaryTesting

/// `POST /{resource}/reload` refreshes every subscriber, upstream calls and all: without
/// `server.adminToken` it answers only clients on the service's own host (loopback), others
/// get 403 `forbidden`. A test can only be a loopback client (everything it starts listens on
/// loopback, and no other source address reaches it), so which addresses are refused is
/// specified on the check itself (`LoopbackAddressTests`); here, end to end, both loopbacks are
/// let in and the token, once set, rules over the address.
@Suite("Reload access: loopback clients only, unless server.adminToken is set")
struct ReloadAccessTests {
    @Test("without an admin token, a loopback client may reload, over IPv4 and IPv6", arguments: ["127.0.0.1", "::1"])
    func loopbackReloads(host: String) async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL), host: host)
        let answer = try await TestHTTP.request(host: host, port: service.port, "POST", "/groups/reload")
        #expect(answer.status == 202, "\(answer.text)")
        #expect(answer.text == #"{"reloaded":0}"#, "no stream, no live pipeline to refresh")
        await service.stop()
        await upstream.shutdown()
    }

    @Test("with an admin token, a loopback client without it gets 401: the address is no substitute for the token")
    func tokenRules() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL) + "\nserver:\n  adminToken: s3cret\n"
        let service = try await ServiceHarness(yaml: yaml, host: "::1")
        let missing = try await TestHTTP.request(host: "::1", port: service.port, "POST", "/groups/reload")
        #expect(missing.status == 401)
        #expect(missing.error?.code == "unauthorized")
        let unchecked = try await TestHTTP.request(host: "::1", port: service.port, "POST", "/groups/reload?team=..")
        #expect(unchecked.status == 401, "the token first: a client without it learns nothing of the parameters")
        let right = try await TestHTTP.request(
            host: "::1", port: service.port, "POST", "/groups/reload", headers: [("Authorization", "Bearer s3cret")])
        #expect(right.status == 202)
        await service.stop()
        await upstream.shutdown()
    }
}
