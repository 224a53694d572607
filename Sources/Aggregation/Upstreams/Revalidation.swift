public import UpstreamClient

/// What an upstream said so that its answer can be asked about again: the answer's `ETag`
/// and `Last-Modified` (RFC 9110 §8.8). A call that sends them back (``conditionalHeaders``)
/// gets `304 Not Modified` and no body when the answer is unchanged: no bytes to read, nothing
/// to parse, and on GitHub's API nothing counted against the hourly quota.
public struct Validators: Sendable, Equatable {
    /// The `ETag`, as the upstream wrote it (`"abc"` or `W/"abc"`).
    public let entityTag: String?
    /// The `Last-Modified` date, as the upstream wrote it.
    public let lastModified: String?

    public init?(entityTag: String?, lastModified: String?) {
        guard entityTag != nil || lastModified != nil else { return nil }
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// The validators of `response`; nil when it has neither.
    public init?(of response: UpstreamResponse) {
        self.init(entityTag: response.header("ETag"), lastModified: response.header("Last-Modified"))
    }

    /// The headers of a call that asks whether the answer changed: `If-None-Match` with the
    /// entity tag; without one, `If-Modified-Since` with the date (a recipient ignores the
    /// date when there is a tag, RFC 9110 §13.1.3, so one header says all).
    public var conditionalHeaders: UpstreamHeaders {
        if let entityTag { return [("If-None-Match", entityTag)] }
        if let lastModified { return [("If-Modified-Since", lastModified)] }
        return []
    }

    /// What keeping them costs, in bytes.
    var byteCount: Int { (entityTag?.utf8.count ?? 0) + (lastModified?.utf8.count ?? 0) }
}

/// What an answer said about keeping it: its validators, and its `Cache-Control` and `Age`
/// (read by the detail cache, ``DetailFreshness``).
public struct AnswerHeaders: Sendable {
    public var validators: Validators?
    public var cacheControl: String?
    public var age: String?

    public init(validators: Validators? = nil, cacheControl: String? = nil, age: String? = nil) {
        self.validators = validators
        self.cacheControl = cacheControl
        self.age = age
    }

    public init(of response: UpstreamResponse) {
        self.init(validators: Validators(of: response), cacheControl: response.header("Cache-Control"), age: response.header("Age"))
    }

    /// The response headers it reads: the only ones a call that wants them keeps.
    static let names: [StaticString] = ["etag", "last-modified", "cache-control", "age"]
}

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
/// answers.keep(document, validators: validators, for: key, bytes: body.count)
/// answers.answer(for: key)?.validators.conditionalHeaders   // [("If-None-Match", "\"v1\"")]
/// ```
public final class KeptAnswers {
    /// Whose call, and which.
    public struct Key: Hashable {
        public let identity: Identity
        /// The call's path below the upstream's base, query included, as sent.
        public let call: ExactText

        public init(identity: Identity, call: String) {
            self.identity = identity
            self.call = ExactText(call)
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
        guard let answer = entries[key] else { return nil }
        entries.touch(key)
        return answer
    }

    /// Keeps `document`, parsed from a body of `bodyBytes`, with its validators for `key`, in
    /// place of what it had. It counts its body: the document's texts are parts of it.
    /// Returns the answer's serial.
    @discardableResult
    public func keep(_ document: JSON, validators: Validators, for key: Key, bodyBytes: Int) -> UInt64 {
        let bytes = bodyBytes + validators.byteCount + key.call.text.utf8.count + key.identity.digest.utf8.count + Self.entryOverhead
        lastSerial += 1
        entries.keep(Answer(validators: validators, document: document, serial: lastSerial), for: key, bytes: bytes)
        return lastSerial
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

/// How a fetch revalidates: the upstream's kept answers, and for whom it calls. Only the
/// calls of live pipelines and views carry one (a one-shot JSON GET asks plainly), and only
/// of upstreams with `revalidate: true`.
public struct Revalidation {
    let answers: KeptAnswers
    let identity: Identity

    /// Calls of `upstream` made for `identity`, revalidated; nil when the upstream keeps no answers.
    public init?(of upstream: Upstream, for identity: Identity) {
        guard let answers = upstream.keptAnswers else { return nil }
        self.answers = answers
        self.identity = identity
    }

    func key(of call: String) -> KeptAnswers.Key {
        KeptAnswers.Key(identity: identity, call: call)
    }
}
