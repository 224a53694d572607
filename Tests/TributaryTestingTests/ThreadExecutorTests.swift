import Foundation
import Glibc
import Testing
import TestThreads

/// TestThreads: test code that computes for long runs on a thread of its own, not on one of
/// the cooperative pool's (one per core), and behaves there as anywhere in the test.
@Suite("Threads of their own for tests that compute")
struct ThreadExecutorTests {
    /// Whether this runs on a ThreadExecutor's thread, by the name the thread gives itself.
    static var onOwnThread: Bool {
        let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .newlines) == ThreadExecutor.threadName
    }

    @Test("a test with .ownThread runs on a thread of its own, sync and async parts alike", .ownThread)
    func trait() async throws {
        #expect(Self.onOwnThread)
        try await Task.sleep(for: .milliseconds(1))
        #expect(Self.onOwnThread, "resumed on the same executor")
    }

    @Test("each case of a parameterized test gets a thread of its own", .ownThread, arguments: [1, 2])
    func parameterized(_ value: Int) {
        #expect(Self.onOwnThread, "case \(value)")
    }

    @Test("offThePool runs its body there, returns its result, throws its error; the caller is back where it was")
    func offThePoolBody() async throws {
        #expect(!Self.onOwnThread)
        let answer = await offThePool { Self.onOwnThread ? 42 : 0 }
        #expect(answer == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await offThePool { () throws(Refused) in throw Refused() } }
        #expect(!Self.onOwnThread)
    }

    @Test("jobs enqueued after shutdown run on the global executor")
    func afterShutdown() async {
        let executor = ThreadExecutor()
        executor.shutdown()
        let ran = await withTaskExecutorPreference(executor) { 7 }
        #expect(ran == 7)
    }
}
