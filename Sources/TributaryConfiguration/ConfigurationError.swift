/// A configuration that cannot be used, naming where the problem is: a key path in the
/// file (`upstreams.tasks.url`), an environment variable or a command-line option.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// Where: `config/tributary.yaml: resources.groups.concurrency`, `TRIBUTARY_LISTEN`, `--upstream`.
    public let location: String
    public let problem: String

    public init(_ location: String, _ problem: String) {
        self.location = location
        self.problem = problem
    }

    public var description: String { "\(location): \(problem)" }
}
