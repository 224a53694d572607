/// The answers of the calls that live pipelines repeat on every refresh (list, details,
/// batches, pages), kept with their ``Validators`` so that the next refresh asks the upstream
/// whether each changed, and a `304` reuses the parsed document.
///
/// Keyed by whose call it was (``Identity``) and the call itself (its path, parameter values
/// and item ids rendered in it), compared byte for byte: no identity ever reuses what was
/// fetched with another's credentials, and no two values an upstream tells apart share an
/// answer. One store per ``Upstream`` of a worker, loop-confined as the upstream is (the
/// worker's pipelines and views make these calls), bounded by bytes
/// (`upstreams.NAME.revalidateBytes`): beyond, the answers used longest ago go first, and
/// their next call is a plain one.
///
/// ```swift
/// let answers = KeptAnswers(budget: 16 << 20)
/// let key = KeptAnswers.Key(identity: caller.identity, call: "/teams/core/groups")
/// answers.keep(document, validators: validators, for: key, bodyBytes: body.count)
/// answers.answer(for: key)?.validators.conditionalHeaders   // [("If-None-Match", "\"v1\"")]
/// ```
public final class KeptAnswers {
    /// Whose call, and which.
    public struct Key: Hashable {
        public let identity: Identity
        /// The call's path below the upstream's base, query included, as sent.
        public let call: ExactText
        /// Both hashed once, when the key is made: the eviction order looks keys up again
        /// as it drops the places it left behind, and hashing a path's bytes each time cost
        /// more than the rest of a revalidated call.
        private let hash: Int

        public init(identity: Identity, call: String) {
            self.identity = identity
            self.call = ExactText(call)
            var hasher = Hasher()
            hasher.combine(identity)
            hasher.combine(self.call)
            hash = hasher.finalize()
        }

        public static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.hash == rhs.hash && lhs.call == rhs.call && lhs.identity == rhs.identity
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }
    }

    /// One call's answer: its validators and the document parsed from its body, and a serial
    /// number that no other answer kept here has: two reads of the same serial read the same
    /// answer, though another pipeline of the identity may have kept a newer one in between.
    public struct Answer {
        public let validators: Validators
        public let document: JSON
        public let serial: UInt64
    }

    /// What an entry costs beyond its body and key: its slot and its place in the eviction
    /// order (as ``DetailCache/entryOverhead``).
    static let entryOverhead = 384

    private var entries: ByteBudgetedEntries<Key, Answer>
    private var lastSerial: UInt64 = 0

    public init(budget: Int) {
        entries = ByteBudgetedEntries(budget: budget)
    }

    /// The answer kept for `key`, if any; a hit counts as a use (the least recently used go first).
    public func answer(for key: Key) -> Answer? {
        entries.use(key)
    }

    /// Keeps `document`, parsed from a body of `bodyBytes`, with its validators for `key`, in
    /// place of what it had. It counts its body (texts kept may be parts of it) and what its
    /// parsed tree holds beyond (``estimatedBytes(of:)``): a page parsed member by member
    /// holds several times its body. Returns the answer's serial.
    @discardableResult
    public func keep(_ document: JSON, validators: Validators, for key: Key, bodyBytes: Int) -> UInt64 {
        let bytes = bodyBytes + Self.estimatedBytes(of: document) + validators.byteCount + key.call.text.utf8.count
            + key.identity.digest.utf8.count + Self.entryOverhead
        lastSerial += 1
        entries.keep(Answer(validators: validators, document: document, serial: lastSerial), for: key, bytes: bytes)
        return lastSerial
    }

    /// What a parsed document holds in memory, estimated from above: each value's slot, the
    /// heap storage of strings too long to be held in place, each kept text. Over-counting
    /// only keeps fewer answers; under-counting would let the budget be passed.
    static func estimatedBytes(of document: JSON) -> Int {
        func text(_ text: String) -> Int { text.utf8.count > 15 ? text.utf8.count + 32 : 0 }
        return switch document {
        case .null, .bool: 0
        case .number(let value), .string(let value): text(value)
        case .array(let elements): 32 + elements.reduce(0) { $0 + 24 + estimatedBytes(of: $1) }
        case .object(let members): 32 + members.reduce(0) { $0 + 40 + text($1.key) + estimatedBytes(of: $1.value) }
        case .raw(let kept): kept.textCount + 64
        }
    }

    /// Forgets `key`'s answer (its new one came without validators).
    public func forget(_ key: Key) {
        entries.remove(key)
    }

    /// Bytes the answers count now (at most the budget).
    public var keptBytes: Int { entries.bytes }

    /// Answers kept now.
    public var keptCount: Int { entries.count }
}
