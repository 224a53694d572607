import HTTPCore

/// One serialized state of a resource, with a version that names its content: equal
/// documents have equal versions, on every worker and across restarts, so a client's
/// `Last-Event-ID` can say "I have this one already".
public struct Snapshot: Sendable, Equatable {
    /// The document as compact JSON text.
    public let json: [UInt8]
    /// 16 hex digits: the FNV-1a 64-bit hash of ``json``.
    public let version: String

    public init(json: [UInt8]) {
        self.json = json
        version = LowercaseHex.string(json.withUnsafeBufferPointer(Self.fnv1a))
    }

    /// FNV-1a, 64 bits, over `bytes`: the version's hash since the first release, which
    /// clients keep (`ETag`, `Last-Event-ID`) across restarts, so it must not change.
    private static func fnv1a(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    public init(_ document: JSON) {
        self.init(json: document.serialized)
    }

    public static func == (lhs: Snapshot, rhs: Snapshot) -> Bool {
        lhs.version == rhs.version && lhs.json == rhs.json
    }
}

/// What a live resource's watchers know: the latest good snapshot, the error of the latest
/// refresh if it failed (the snapshot then stays as it was), and the input values that refresh
/// answered.
public struct LiveState: Sendable, Equatable {
    public var snapshot: Snapshot?
    public var error: ResourceError?
    /// The values of the view's inputs the latest refresh answered, e.g. `["q": "swift"]`;
    /// empty for a view without inputs. A client that changed an input can tell the answer to
    /// its new value from a late answer to the old one (`GET /events` sends them with each
    /// snapshot and error).
    public var inputs: [String: String]
    /// Whether ``snapshot`` is a progressive first document still waiting for some details
    /// (its items marked pending): only streams that asked for `progressive=true` show it.
    public var pending: Bool

    public init(snapshot: Snapshot? = nil, error: ResourceError? = nil, inputs: [String: String] = [:], pending: Bool = false) {
        self.snapshot = snapshot
        self.error = error
        self.inputs = inputs
        self.pending = pending
    }

    /// The state after a refresh for `inputs` ended with `result`.
    public func applying(_ result: Result<JSON, ResourceError>, inputs: [String: String] = [:]) -> LiveState {
        switch result {
        case .success(let document): LiveState(snapshot: Snapshot(document), error: nil, inputs: inputs)
        case .failure(let error): LiveState(snapshot: snapshot, error: error, inputs: inputs, pending: pending)
        }
    }

    /// The state after a progressive first document went on (`result`: a partial or the
    /// complete document) or failed.
    public func applying(_ result: Result<DocumentProgress, ResourceError>) -> LiveState {
        switch result {
        case .success(let progress): LiveState(snapshot: Snapshot(progress.document), pending: !progress.isComplete)
        case .failure(let error): LiveState(snapshot: snapshot, error: error, pending: pending)
        }
    }
}
