/// How long a cached detail is fresh (`details.cacheFor`): a time of the configuration's
/// (`30s`), or what the detail's upstream answer says (`upstream`), as a private cache reads
/// `Cache-Control` (RFC 9111 §5.2.2): `no-store` keeps nothing, `no-cache` keeps the detail
/// only to revalidate it on every use, `max-age=N` keeps it fresh for N seconds less its `Age`.
/// An answer without `max-age` is revalidated on every use: no heuristic freshness is guessed.
public enum DetailFreshness: Sendable, Equatable {
    case fixed(Duration)
    case upstream

    /// Whether details are kept at all.
    public var keepsDetails: Bool { self != .fixed(.zero) }

    /// How long an answer with `headers` is fresh; nil when it must not be kept.
    func lifetime(of headers: AnswerHeaders) -> Duration? {
        switch self {
        case .fixed(let duration): duration
        case .upstream: Self.lifetime(cacheControl: headers.cacheControl, age: headers.age)
        }
    }

    /// RFC 9111's longest delta-seconds (§1.2.2): larger values are taken as this one.
    static let longestDelta: Int64 = 1 << 31

    /// The freshness `cacheControl` and `age` give a private cache; nil for `no-store`.
    /// Numbers from outside are clamped, never trusted to fit: a `max-age` of 2^64 is 2^31 s.
    static func lifetime(cacheControl: String?, age: String?) -> Duration? {
        var maxAge: Int64?
        var noCache = false
        var repeatedMaxAge = false
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            switch parts[0].trimmingWhitespace.lowercased() {
            case "no-store": return nil
            case "no-cache": noCache = true
            case "max-age":
                // `max-age="60"` is tolerated (§5.2: senders should not quote it, recipients may accept it).
                let value = parts.count == 2 ? parts[1].trimmingWhitespace.trimming("\"") : ""
                if maxAge != nil { repeatedMaxAge = true }
                maxAge = deltaSeconds(value) ?? 0
            default: break
            }
        }
        // max-age twice: stale (RFC 9111 §4.2.1 allows the first, or stale; the safer).
        guard !noCache, !repeatedMaxAge, let maxAge else { return .zero }
        let current = age.flatMap { deltaSeconds(Substring($0).trimmingWhitespace) } ?? 0
        return .seconds(max(0, maxAge - current))
    }

    /// A delta-seconds value (digits only), at most ``longestDelta``; nil when it is not one.
    private static func deltaSeconds(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text).map { min($0, longestDelta) } ?? longestDelta
    }
}

extension Substring {
    fileprivate var trimmingWhitespace: Substring {
        let trimmed = drop { $0 == " " || $0 == "\t" }
        return trimmed.prefix(trimmed.count - trimmed.reversed().prefix { $0 == " " || $0 == "\t" }.count)
    }

    fileprivate func trimming(_ quote: Character) -> Substring {
        count >= 2 && first == quote && last == quote ? dropFirst().dropLast() : self
    }
}
