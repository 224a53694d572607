import EventLoop
import Logging
import Testing
import TributaryConfiguration
@testable import TributaryServer
import TributaryTesting

/// A test that ends early (a thrown error, a failed `#require`) drops its ``ServiceHarness``
/// without `stop()`, its clients still connected. That must cost the test only itself: the
/// service's connections close, and the process, with every other test in it, goes on.
@Suite("a service dropped while it serves")
struct DroppedServiceTests {
    @Test("dropped without stop(), with an event stream open and a request half sent, it closes both and the process lives")
    func droppedWithOpenConnections() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 3))
        let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
        var service: ServiceHarness? = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let port = try #require(service?.port)

        // An event stream with a live view model behind it.
        let stream = try await SSEClient(port: port, path: "/groups")
        #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON)
        // A keep-alive connection: one request answered, the next one half sent.
        let keptAlive = try await TestConnection(port: port)
        try await keptAlive.sendRequest("GET", "/groups")
        #expect(try await keptAlive.readResponse().status == 200)
        try await keptAlive.send("GET /groups HTTP/1.1\r\nHost: 127.0.0.1\r\n")

        service = nil

        #expect(await stream.connection.waitForClose(within: .seconds(10)), "the event stream's connection closes")
        #expect(await keptAlive.waitForClose(within: .seconds(10)), "the kept-alive connection closes")
        await upstream.shutdown()
    }

    /// What a dropped harness met when its loop was answering a request at that moment: the
    /// request held the server while the worker went, so the server outlived the worker, and
    /// freeing its connections ended event streams the worker had already destroyed.
    @Test("a worker that goes while its server is held elsewhere closes its connections first, its event streams whole")
    func serverOutlivesWorker() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 3))
        let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
        var configuration = try Configuration.load(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL), file: "test.yaml")
        configuration.server.listen = ListenAddress(host: "127.0.0.1", port: 0)
        let thread = try LoopThread()
        let (port, worker) = try await thread.run { [configuration] loop in
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let worker = try Worker(configuration: configuration, loop: loop, logger: logger)
            return (try worker.bind(), LoopBound(worker, loop: loop))
        }
        let stream = try await SSEClient(port: port, path: "/groups")
        #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON)

        try await thread.run { _ in
            let server = worker.value.server  // as a request answering on the loop holds it
            worker.release()
            withExtendedLifetime(server) {}
        }

        #expect(await stream.connection.waitForClose(within: .seconds(10)), "the event stream's connection closes")
        await thread.stop()
        await upstream.shutdown()
    }
}
