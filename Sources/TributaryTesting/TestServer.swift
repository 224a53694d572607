public import EventLoop
public import HTTPServer

/// An ``HTTPServer`` on a loop thread of its own, listening on a free loopback port, for
/// tests that talk to it with a ``TestConnection``.
///
/// ```swift
/// let server = try await TestServer.start { request in request.respond(status: 200, json: "{}") }
/// let response = try await TestHTTP.get(port: server.port, "/")
/// await server.stop()
/// ```
public final class TestServer: Sendable {
    public let port: UInt16
    public let thread: LoopThread
    private let server: LoopBound<HTTPServer>

    private init(port: UInt16, thread: LoopThread, server: LoopBound<HTTPServer>) {
        self.port = port
        self.thread = thread
        self.server = server
    }

    /// Dropped without ``stop()`` (its test threw), the server still goes on its loop.
    deinit {
        let server = self.server
        thread.stopWithoutWaiting { server.release() }
    }

    /// `handler` runs on the server's loop (so it may keep loop-confined state).
    public static func start(
        limits: HTTPServer.Limits = .init(), handler: @escaping @Sendable (ServerRequest, EventLoop) -> Void
    ) async throws -> TestServer {
        let thread = try LoopThread()
        let (port, server) = try await thread.run { loop in
            let server = try HTTPServer(loop: loop, limits: limits) { handler($0, loop) }
            return (try server.bind(host: "127.0.0.1", port: 0), LoopBound(server, loop: loop))
        }
        return TestServer(port: port, thread: thread, server: server)
    }

    /// Runs `body` with the server, on its loop.
    public func run<Result: Sendable>(_ body: @escaping @Sendable (HTTPServer) throws -> Result) async throws -> Result {
        let server = self.server
        return try await thread.run { _ in try body(server.value) }
    }

    public func stop() async {
        let server = self.server
        await thread.stop { server.release() }
    }
}
