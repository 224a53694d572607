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

    /// The longest entity tag kept: a longer one is an upstream's mistake, or an attempt to
    /// make every call carry its bytes (or fail on the upstream's header limit).
    static let longestEntityTag = 1024

    /// The validators of `response` that can tell its answer from another; nil when it has none.
    ///
    /// An entity tag is kept when it is one tag of at most ``longestEntityTag`` bytes: not
    /// empty, not `*` (which matches every answer: a 304 forever), not a list. A
    /// `Last-Modified` date is kept only when the answer's `Date` is another second (RFC 9110
    /// §8.8.2.2): an answer changed twice within its second would otherwise be a 304 to the
    /// first change's date, the second change never fetched. A weak tag (`W/"…"`) is sent back
    /// as it came: a 304 to it says the answer is equivalent, as the upstream judges.
    public init?(of response: UpstreamResponse) {
        self.init(AnswerHeaders.Read(response))
    }

    /// The validators of the headers read from an answer.
    init?(_ read: AnswerHeaders.Read) {
        let tag = read.entityTag.flatMap { tag in
            tag.isEmpty || tag == "*" || tag.utf8.contains(UInt8(ascii: ",")) || tag.utf8.count > Self.longestEntityTag ? nil : tag
        }
        let modified = read.lastModified.flatMap { modified in read.date != nil && read.date != modified ? modified : nil }
        self.init(entityTag: tag, lastModified: modified)
    }

    /// The headers of a call that asks whether the answer changed: `If-None-Match` with the
    /// entity tag; without one, `If-Modified-Since` with the date (a recipient ignores the
    /// date when there is a tag, RFC 9110 §13.1.3, so one header says all).
    public var conditionalHeaders: [(String, String)] {
        conditionalHeader.map { [$0] } ?? []
    }

    /// ``conditionalHeaders``' one header, for a call that appends it to its own.
    var conditionalHeader: (String, String)? {
        if let entityTag { return ("If-None-Match", entityTag) }
        if let lastModified { return ("If-Modified-Since", lastModified) }
        return nil
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
        let read = Read(response)
        self.init(validators: Validators(read), cacheControl: read.cacheControl, age: read.age)
    }

    /// The headers of an answer that say whether and how long it can be kept, read in one
    /// pass (a call that wants them keeps only these, by their lowercase names:
    /// ``UpstreamRequest/keptResponseHeaders``; any other spelling is compared without case).
    struct Read {
        var entityTag: String?
        var lastModified: String?
        var date: String?
        /// Every line, joined by `, ` (RFC 9110 §5.3): a list sent twice is one list.
        var cacheControl: String?
        var age: String?

        init(_ response: UpstreamResponse) {
            for (name, value) in response.headers {
                switch name {
                case "etag": entityTag = entityTag ?? value
                case "last-modified": lastModified = lastModified ?? value
                case "date": date = date ?? value
                case "cache-control": cacheControl = cacheControl.map { $0 + ", " + value } ?? value
                case "age": age = age ?? value
                default:
                    switch name.lowercased() {
                    case "etag": entityTag = entityTag ?? value
                    case "last-modified": lastModified = lastModified ?? value
                    case "date": date = date ?? value
                    case "cache-control": cacheControl = cacheControl.map { $0 + ", " + value } ?? value
                    case "age": age = age ?? value
                    default: break
                    }
                }
            }
        }
    }

    /// The response headers it reads: the only ones a call that wants them keeps.
    static let names: [StaticString] = ["etag", "last-modified", "date", "cache-control", "age"]
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
