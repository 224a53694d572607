import HTTPCore
import Aggregation
import EventLoop
import HTTPServer
import TributaryConfiguration

/// What replicas tell each other through Redis, and how it is written: the payloads that
/// ``FleetSeal`` signs and checks (it adds the MAC and the time), and what a replica checks
/// in them once their MAC is good, so that even a replica's own mistake cannot reach its
/// subscribers.
///
/// - A live resource's state, from its leader (sealed with when it was produced): a line
///   with the refresh's error as JSON (`null` when it succeeded), then the snapshot's JSON
///   as is (empty when there is none yet). Versions are content hashes, so followers compute
///   the same `id:` from the same bytes. A document that is not JSON, or larger than its
///   upstream's `maxResponseBytes`, is refused.
/// - A control request for a stream (to the replica holding it) and its answer: small JSON
///   objects. A stream is named by the digest of its id (``ClusterKeys/streamDigest(_:)``),
///   never by the id; a request's tag is 64 random bits, so an answer cannot be guessed.
/// - A reload: a random nonce (so a replayed one is told apart), the resource's name, and
///   the parameter values it is aimed at, if any (never a token or a credential: values of
///   the resource's declared parameters only).
/// - A lease or a stream's location: the holding replica's id.
enum ClusterMessage {
    // MARK: - Live states

    static func encode(_ state: LiveState) -> [UInt8] {
        var bytes: [UInt8] = []
        if let error = state.error {
            bytes += JSON.object([
                ("code", .string(error.code.rawValue)), ("upstream", .string(error.upstream)),
                ("path", .string(error.path)), ("message", .string(error.message)),
            ]).serialized
        } else {
            bytes += Array("null".utf8)
        }
        bytes.append(0x0A)
        if let snapshot = state.snapshot { bytes += snapshot.json }
        return bytes
    }

    /// The state in `payload`, or why it is refused: a document larger than
    /// `maximumDocumentBytes` (``FleetRejection/tooLarge``) or not valid JSON, an error that
    /// names no known code (``FleetRejection/malformed``).
    static func decodeState(_ payload: ArraySlice<UInt8>, maximumDocumentBytes: Int) -> Result<LiveState, FleetRejection> {
        guard let lineEnd = payload.firstIndex(of: 0x0A) else { return .failure(.malformed) }
        let document = Array(payload[(lineEnd + 1)...])
        guard document.count <= maximumDocumentBytes else { return .failure(.tooLarge) }
        guard let error = try? JSON(parsing: payload[..<lineEnd]) else { return .failure(.malformed) }
        var state = LiveState()
        switch error {
        case .null:
            break
        case .object:
            guard let code = error["code"]?.stringValue.flatMap(ResourceError.Code.init(rawValue:)) else { return .failure(.malformed) }
            state.error = ResourceError(
                code: code, upstream: error["upstream"]?.stringValue ?? "", path: error["path"]?.stringValue ?? "",
                message: error["message"]?.stringValue ?? "")
        default:
            return .failure(.malformed)
        }
        if !document.isEmpty {
            guard (try? JSON(parsing: document, keeping: .objects)) != nil else { return .failure(.malformed) }
            state.snapshot = Snapshot(json: document)
        }
        return .success(state)
    }

    // MARK: - Reloads

    /// A reload: a random nonce (so a replayed one is told apart), a fleet name, and for a
    /// resource's name the parameter values its pipelines must hold (none: every one).
    struct Reload: Equatable {
        let nonce: UInt64
        /// A resource's name (its pipelines), or one keyed pipeline's: the name, a colon and 32
        /// lowercase hex digits (``ClusterAgent/fleetName(of:)``: a stream's own reload trigger).
        let name: String
        var values: ParameterValues = .none
    }

    /// `<nonce> <name>`, as every reload was written before they could be aimed (so replicas
    /// that predate aimed reloads still take every other reload), or `<nonce> <name> <values>`,
    /// the values a JSON object of strings: `00000000deadbeef groups {"team":"core"}`. Such a
    /// replica drops the longer form as malformed: it reloads nothing rather than everything.
    static func encode(_ reload: Reload) -> [UInt8] {
        var bytes = Array("\(LowercaseHex.string(reload.nonce)) \(reload.name)".utf8)
        guard !reload.values.isEmpty else { return bytes }
        bytes.append(UInt8(ascii: " "))
        bytes += JSON.object(reload.values.entries.map { ($0.name, JSON.string($0.value)) }).serialized
        return bytes
    }

    /// The reload in `payload`, or nil: values only after a resource's name, an object of
    /// non-empty strings, each name once.
    static func decodeReload(_ payload: ArraySlice<UInt8>) -> Reload? {
        guard payload.count > 17, payload[payload.startIndex + 16] == UInt8(ascii: " ") else { return nil }
        let digits = payload.prefix(16)
        guard digits.allSatisfy(LowercaseHex.isDigit) else { return nil }
        let rest = payload.dropFirst(17)
        let space = rest.firstIndex(of: UInt8(ascii: " "))
        let name = rest[..<(space ?? rest.endIndex)]
        let colon = name.firstIndex(of: UInt8(ascii: ":"))
        let resource = name[..<(colon ?? name.endIndex)]
        guard !resource.isEmpty, resource.allSatisfy({ Configuration.resourceNameBytes.contains($0) }) else { return nil }
        if let colon {
            let digest = name[(colon + 1)...]
            guard digest.count == 32, digest.allSatisfy(LowercaseHex.isDigit) else { return nil }
        }
        var reload = Reload(nonce: LowercaseHex.value(of: digits), name: String(decoding: name, as: UTF8.self))
        guard let space else { return reload }
        guard colon == nil, let members = (try? JSON(parsing: rest[(space + 1)...]))?.objectValue, !members.isEmpty else { return nil }
        var values: [String: String] = [:]
        for (key, value) in members {
            guard !key.isEmpty, let text = value.stringValue, !text.isEmpty, values.updateValue(text, forKey: key) == nil else { return nil }
        }
        reload.values = ParameterValues(values)
        return reload
    }

    // MARK: - Replicas

    /// The replica id in `payload` (a lease's or a stream location's): 32 lowercase hex
    /// digits, as ``ClusterAgent/replica`` is, or nil.
    static func decodeReplica(_ payload: ArraySlice<UInt8>) -> String? {
        guard let id = StreamID(String(decoding: payload, as: UTF8.self)) else { return nil }
        return id.description
    }

    // MARK: - Stream control

    /// A control request: apply `control` to the stream with digest `stream`, answer `from`
    /// with `tag`.
    struct ControlRequest: Equatable {
        let tag: UInt64
        let from: String
        let stream: String
        let control: StreamControl
        /// The subject of the requester's token, as its identity digest (a keyed hash: never
        /// the token), nil without one: the holder lets only its stream's owner steer it.
        var subject: String? = nil
    }

    /// The answer to a control request: the HTTP status and, for an error, its code and message.
    struct ControlReply: Equatable {
        let tag: UInt64
        let outcome: Result<Void, HTTPError>

        static func == (lhs: ControlReply, rhs: ControlReply) -> Bool {
            guard lhs.tag == rhs.tag else { return false }
            switch (lhs.outcome, rhs.outcome) {
            case (.success, .success): return true
            case (.failure(let a), .failure(let b)): return a == b
            default: return false
            }
        }
    }

    enum Addressed: Equatable {
        case request(ControlRequest)
        case reply(ControlReply)
    }

    static func encode(_ request: ControlRequest) -> [UInt8] {
        var members: [(key: String, value: JSON)] = [
            ("kind", .string("control")), ("tag", .integer(request.tag)), ("from", .string(request.from)),
            ("stream", .string(request.stream)),
        ]
        if let subject = request.subject { members.append(("subject", .string(subject))) }
        switch request.control {
        case .trigger(let name, let arguments):
            members += [("trigger", .string(name)),
                        ("arguments", .object(arguments.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }))]
        case .input(let name, let value):
            members += [("input", .string(name)), ("value", .string(value))]
        }
        return JSON.object(members).serialized
    }

    static func encode(_ reply: ControlReply) -> [UInt8] {
        var members: [(key: String, value: JSON)] = [("kind", .string("reply")), ("tag", .integer(reply.tag))]
        switch reply.outcome {
        case .success:
            members.append(("status", .integer(202)))
        case .failure(let error):
            members += [("status", .integer(error.status)), ("code", .string(error.code)), ("message", .string(error.message))]
        }
        return JSON.object(members).serialized
    }

    /// A message on a replica's own channel: a request for one of its streams, or an answer
    /// to one of its requests. Nil for anything else.
    static func decodeAddressed(_ bytes: ArraySlice<UInt8>) -> Addressed? {
        guard let message = try? JSON(parsing: bytes), let kind = message["kind"]?.stringValue,
              case .number(let tagText)? = message["tag"], let tag = UInt64(tagText) else { return nil }
        switch kind {
        case "control":
            guard let from = message["from"]?.stringValue, StreamID(from) != nil,
                  let stream = message["stream"]?.stringValue else { return nil }
            let subject = message["subject"]?.stringValue
            if let name = message["trigger"]?.stringValue {
                var arguments: [String: String] = [:]
                for (key, value) in message["arguments"]?.objectValue ?? [] { arguments[key] = value.stringValue }
                return .request(ControlRequest(
                    tag: tag, from: from, stream: stream, control: .trigger(name, arguments: arguments), subject: subject))
            }
            guard let name = message["input"]?.stringValue, let value = message["value"]?.stringValue else { return nil }
            return .request(ControlRequest(tag: tag, from: from, stream: stream, control: .input(name, value: value), subject: subject))
        case "reply":
            guard case .number(let statusText)? = message["status"], let status = Int(statusText), (200...599).contains(status) else {
                return nil
            }
            if status == 202 { return .reply(ControlReply(tag: tag, outcome: .success(()))) }
            let error = HTTPError(
                status: status, code: message["code"]?.stringValue ?? "cluster_error", message: message["message"]?.stringValue ?? "")
            return .reply(ControlReply(tag: tag, outcome: .failure(error)))
        default:
            return nil
        }
    }
}

/// The names a fleet uses in Redis, all under `cluster.keyPrefix` and the fleet's name
/// (``FleetSeal/fleet``, from its secret): `tributary:3f9c0b1e7a2d4c58:lease:groups`.
struct ClusterKeys: Sendable {
    /// `cluster.keyPrefix`, `:`, the fleet's name.
    let prefix: String

    init(prefix: String, fleet: String) {
        self.prefix = "\(prefix):\(fleet)"
    }

    /// The replica holding a live resource's lease (value: its replica id, sealed; expires unless renewed).
    func lease(_ resource: String) -> String { "\(prefix):lease:\(resource)" }
    /// Replicas with subscribers of a resource, scored by when that expires (milliseconds).
    func interest(_ resource: String) -> String { "\(prefix):interest:\(resource)" }
    /// The latest state of a resource, for a replica whose first subscriber just arrived.
    func latest(_ resource: String) -> String { "\(prefix):latest:\(resource)" }
    /// Where a resource's leader publishes each state.
    func states(_ resource: String) -> String { "\(prefix):states:\(resource)" }
    /// Where any replica announces a reload.
    var reloads: String { "\(prefix):reload" }
    /// The replica holding a stream (value: its replica id, sealed), under the digest of the id.
    func stream(digest: String) -> String { "\(prefix):stream:\(digest)" }
    /// A replica's own channel: control requests for its streams, answers to its requests.
    func replica(_ id: String) -> String { "\(prefix):replica:\(id)" }

    /// The digest a stream is known by in Redis: reading Redis gives nobody a stream's id.
    static func streamDigest(_ id: StreamID) -> String {
        Digest.sha256Hex(Array(id.description.utf8))
    }
}
