public import Testing

/// A test, or every test of a suite, that runs on a thread of its own rather than on Swift's
/// cooperative pool: for tests that compute for more than a few milliseconds without
/// suspending (exhaustive byte tables, property tests, megabytes of JSON). Why it matters:
/// ``ThreadExecutor``.
///
/// ```swift
/// @Suite("Wire syntax", .ownThread) struct WireSyntaxTests { … }
/// @Test("random documents", .ownThread) func randomDocuments() { … }
/// ```
public struct OwnThreadTrait: TestTrait, SuiteTrait, TestScoping {
    /// On a suite, each of its tests (each case of a parameterized one) gets its own thread.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite itself, and a parameterized test as a whole, only group their cases.
        guard testCase != nil else { return try await function() }
        try await offThePool { try await function() }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Runs the test (each test of a suite) on a thread of its own: ``OwnThreadTrait``.
    public static var ownThread: Self { OwnThreadTrait() }
}
