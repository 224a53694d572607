import Testing
import TributaryTesting

/// A stream's id is the one credential for its triggers and inputs, and an `access_token` is
/// a credential by name: the service's log (read here as it writes it, from the real process)
/// names a stream by the first 8 digits of its id and never holds either whole.
@Suite("Secrets stay out of the log")
struct LoggedSecretsTests {
    @Test("a stream steered by its id is logged by the id's first 8 digits and never whole, labels no metric; its error answers shorten it too")
    func streamIDs() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: ProcessTests.yaml(upstream: upstream.baseURL))
        let stream = try await SSEClient(port: service.port, path: "/groups")
        let id = try await stream.announcedID()
        let prefix = id.prefix(8) + "…"

        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/reload").status == 202)
        // Spelled as the router reads it, percent-decoded.
        #expect(try await TestHTTP.request(port: service.port, "POST", "/%73treams/\(id)/triggers/reload").status == 202)
        let unknownTrigger = try await TestHTTP.request(port: service.port, "POST", "/streams/\(id)/triggers/nothing")
        #expect(unknownTrigger.error?.code == "unknown_trigger")
        #expect(unknownTrigger.error?.message.contains(prefix) == true)
        #expect(unknownTrigger.error?.message.contains(id) == false)
        let input = try await TestHTTP.request(port: service.port, "PUT", "/streams/\(id)/inputs/q", body: Array("x".utf8))
        #expect(input.error?.code == "unknown_input")
        let unknownStream = String(id.reversed())
        #expect(try await TestHTTP.request(port: service.port, "POST", "/streams/\(unknownStream)/triggers/reload").status == 404)
        stream.close()

        let lines = [
            "POST /streams/\(prefix)/triggers/reload 202", "POST /%73treams/\(prefix)/triggers/reload 202",
            "POST /streams/\(prefix)/triggers/nothing 404", "PUT /streams/\(prefix)/inputs/q 404",
            "POST /streams/\(unknownStream.prefix(8))…/triggers/reload 404", "GET /groups disconnected",
        ]
        #expect(await service.output.wait(timeout: .seconds(10)) { log in lines.allSatisfy(log.contains) }, "\(service.output.value)")
        #expect(!service.output.value.contains(id))
        #expect(!service.output.value.contains(unknownStream))
        let metrics = try await TestHTTP.get(port: service.port, "/metrics").text
        #expect(metrics.contains(#"route="/streams/{id}/triggers/{name}""#), "the route's pattern labels the series")
        #expect(!metrics.contains(id), "the id labels nothing")
        await upstream.shutdown()
    }

    @Test("an access_token query value is never logged, however its name is spelled; the rest of the target is")
    func accessTokens() async throws {
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let service = try await ServiceProcess(yaml: ProcessTests.yaml(upstream: upstream.baseURL))
        for target in ["/groups?access_token=SECRET-1&view=full", "/groups?x=1&access%5Ftoken=SECRET-2", "/nowhere?access_token=SECRET-3"] {
            _ = try await TestHTTP.get(port: service.port, target)
        }
        let lines = ["GET /groups?access_token=…&view=full 200", "GET /groups?x=1&access%5Ftoken=… 200", "GET /nowhere?access_token=… 404"]
        #expect(await service.output.wait(timeout: .seconds(10)) { log in lines.allSatisfy(log.contains) }, "\(service.output.value)")
        #expect(!service.output.value.contains("SECRET"))
        await upstream.shutdown()
    }
}
