import Foundation
import HTTPServer
import Testing
import TributaryTesting

/// The test client waits on the network without holding a thread of Swift's cooperative pool,
/// so the suites can run side by side on a machine with two cores.
@Suite("Test client")
struct TestConnectionTests {
    /// Requests the server holds until the test answers them (loop-confined).
    final class Held: @unchecked Sendable {
        var requests: [ServerRequest] = []
    }

    /// A server that answers nothing until ``answerAll(_:on:)``; `received` counts the requests.
    static func holdingServer(_ held: Held, received: Observed<Int>) async throws -> TestServer {
        try await TestServer.start { request, _ in
            held.requests.append(request)
            received.update { $0 += 1 }
        }
    }

    static func answerAll(_ held: Held, on server: TestServer) async throws {
        try await server.thread.run { _ in
            for request in held.requests { request.respond(status: 200, json: "{}") }
            held.requests.removeAll()
        }
    }

    /// Lets go of the held requests on the server's loop, unanswered, before the server stops.
    static func forgetAll(_ held: Held, on server: TestServer) async throws {
        try await server.thread.run { _ in held.requests.removeAll() }
    }

    @Test("more waiting reads than the pool has threads: the test still runs, answers, and every read gets its response")
    func readsDoNotHoldPoolThreads() async throws {
        let held = Held()
        let received = Observed(0)
        let server = try await Self.holdingServer(held, received: received)
        let readers = 3 * ProcessInfo.processInfo.activeProcessorCount
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<readers {
                group.addTask {
                    let connection = try await TestConnection(port: server.port)
                    try await connection.sendRequest("GET", "/")
                    return try await connection.readResponse().status
                }
            }
            // Blocking reads would hold every thread of the pool here, and this task would not
            // run again before their timeouts.
            #expect(await received.wait(timeout: .seconds(5)) { $0 == readers })
            try await Self.answerAll(held, on: server)
            var statuses: [Int] = []
            for try await status in group { statuses.append(status) }
            #expect(statuses == Array(repeating: 200, count: readers))
        }
        await server.stop()
    }

    @Test("a read that gets nothing within the connection's timeout throws timedOut, not sooner")
    func readTimesOut() async throws {
        let held = Held()
        let received = Observed(0)
        let server = try await Self.holdingServer(held, received: received)
        let connection = try await TestConnection(port: server.port, timeout: .milliseconds(200))
        try await connection.sendRequest("GET", "/")
        let start = ContinuousClock.now
        let error = await #expect(throws: TestClientError.self) { try await connection.readResponse() }
        #expect(ContinuousClock.now - start >= .milliseconds(200))
        guard case .timedOut? = error else {
            Issue.record("expected timedOut, got \(String(describing: error))")
            return
        }
        try await Self.forgetAll(held, on: server)
        await server.stop()
    }

    @Test("cancelling a task that waits for a read ends the wait at once with CancellationError")
    func cancelledRead() async throws {
        let held = Held()
        let received = Observed(0)
        let server = try await Self.holdingServer(held, received: received)
        let reader = Task {
            let connection = try await TestConnection(port: server.port, timeout: .seconds(60))
            try await connection.sendRequest("GET", "/")
            return try await connection.readResponse().status
        }
        #expect(await received.wait(timeout: .seconds(5)) { $0 == 1 })
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        try await Self.forgetAll(held, on: server)
        await server.stop()
    }
}
