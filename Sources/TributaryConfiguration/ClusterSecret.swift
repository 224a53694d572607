/// `cluster.secret`: what the replicas of a fleet sign everything they write to Redis with
/// (``FleetSeal``). It never shows: its description, its reflection (`dump`, a configuration
/// printed whole) and its errors say only that it is there, so it reaches no log line, no
/// metric and no error.
///
/// ```swift
/// let secret = try ClusterSecret("4f0c…", at: "TRIBUTARY_CLUSTER_SECRET")   // ≥ 16 bytes
/// "\(secret)"                                                               // "<secret>"
/// ```
public struct ClusterSecret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The shortest secret taken: 128 bits if it is random (`openssl rand -hex 16` is 32).
    public static let minimumBytes = 16

    /// The secret's UTF-8 bytes, the HMAC key.
    package let bytes: [UInt8]

    /// `text` as a secret, or an error naming `location` (never the text) when it is shorter
    /// than ``minimumBytes``.
    public init(_ text: String, at location: String) throws(ConfigurationError) {
        guard text.utf8.count >= Self.minimumBytes else {
            throw ConfigurationError(
                location, "expected a secret of at least \(Self.minimumBytes) bytes, found \(text.utf8.count) (e.g. openssl rand -hex 32)")
        }
        bytes = Array(text.utf8)
    }

    public var description: String { "<secret>" }
    public var debugDescription: String { "<secret>" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
