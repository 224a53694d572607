import HTTPCore

/// Every numeric setting's range, in one table: what the loader accepts for the key from the
/// file, the environment or the command line. A value outside it, or not a number, fails
/// the start naming the key (exit 1); a reload with it changes nothing and logs the key.
///
/// Why ranges and not only minimums: a setting meets arithmetic (a rate limit's burst times
/// its interval, a backoff doubled per retry, a buffer allocated at its size) and Swift traps
/// on overflow; `rateLimit: {rate: 1/h, burst: 3000000000}` ended the process that way. Each
/// upper bound is far above any sensible value and far below any overflow.
///
/// docs/configuration.md's "Ranges" table is ``markdownTable`` (a test compares them), and a
/// test sets every key to both ends, one past each, 2^63, 2^64, 1e308, inf, nan, −1 and text.
enum SettingRanges {
    enum Bounds: Sendable, Equatable {
        case whole(ClosedRange<Int>)
        case duration(ClosedRange<Duration>)
        /// Requests per second, written `N/s`, `N/m` or `N/h`.
        case rate(ClosedRange<Double>)
    }

    /// By key path; `*` stands for a name the file chooses (an upstream's, a resource's).
    static let all: [(key: String, bounds: Bounds)] = [
        ("server.workers", .whole(1...256)),
        ("server.requestTimeout", .duration(.milliseconds(10) ... .seconds(3600))),
        ("server.maxHeaderBytes", .whole(1024...1 << 20)),
        ("server.maxBodyBytes", .whole(0...1 << 26)),
        ("server.maxConnections", .whole(1...1_000_000)),
        ("server.shutdownTimeout", .duration(.zero ... .seconds(3600))),
        ("server.staleIfErrorBytes", .whole(0...1 << 32)),
        ("server.maxIdentities", .whole(1...1_000_000)),
        ("server.maxStreamsPerClient", .whole(1...1_000_000)),
        ("server.maxClientSharePercent", .whole(1...100)),
        ("server.maxRateLimitBuckets", .whole(1000...10_000_000)),
        ("server.rateLimit.rate", .rate(1.0 / 3600 ... 1_000_000)),
        ("server.rateLimit.burst", .whole(1...1_000_000)),
        ("sse.heartbeat", .duration(.milliseconds(10) ... .seconds(3600))),
        ("sse.retry", .duration(.zero ... .seconds(86_400))),
        ("sse.sendBuffer", .whole(4096...1 << 26)),
        ("sse.maxSubscribers", .whole(1...1_000_000)),
        ("cluster.leaseTTL", .duration(.milliseconds(300) ... .seconds(3600))),
        ("auth.jwt.leeway", .duration(.zero ... .seconds(3600))),
        ("auth.jwt.jwksRefresh", .duration(.seconds(10) ... .seconds(86_400))),
        ("upstreams.*.timeout", .duration(.milliseconds(1) ... .seconds(3600))),
        ("upstreams.*.retries", .whole(0...100)),
        ("upstreams.*.backoff", .duration(.zero ... .seconds(60))),
        ("upstreams.*.poolSize", .whole(1...4096)),
        ("upstreams.*.maxQueue", .whole(0...1_000_000)),
        ("upstreams.*.maxResponseBytes", .whole(1024...1 << 30)),
        ("upstreams.*.circuitBreaker.failures", .whole(0...1_000_000)),
        ("upstreams.*.circuitBreaker.openFor", .duration(.milliseconds(1) ... .seconds(86_400))),
        ("resources.*.staleIfError", .duration(.milliseconds(1) ... .seconds(7 * 86_400))),
        ("resources.*.refreshInterval", .duration(.milliseconds(10) ... .seconds(86_400))),
        ("resources.*.maxLivePipelines", .whole(1...1_000_000)),
        ("resources.*.concurrency", .whole(1...1024)),
        ("resources.*.details.batchWindow", .duration(.zero ... .seconds(10))),
        ("resources.*.details.cacheFor", .duration(.zero ... .seconds(86_400))),
        ("resources.*.details.cacheBytes", .whole(0...1 << 32)),
        ("resources.*.details.batch.max", .whole(1...1000)),
        ("resources.*.minimumLength", .whole(0...1024)),
        ("resources.*.debounce", .duration(.zero ... .seconds(3600))),
        ("resources.*.rateLimit.rate", .rate(1.0 / 3600 ... 1_000_000)),
        ("resources.*.rateLimit.burst", .whole(1...1_000_000)),
    ]

    private static let byKey = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0.bounds) })

    /// The bounds of the key at `pattern` (a key path with `*` for chosen names).
    static func bounds(of pattern: String) -> Bounds? {
        byKey[pattern]
    }

    /// The range of a whole-number key, for messages and checks outside a YAML section (an
    /// environment variable, a command-line option).
    static func wholeRange(of pattern: String) -> ClosedRange<Int>? {
        guard case .whole(let range)? = byKey[pattern] else { return nil }
        return range
    }

    /// `from 1 to 256`, `from 300ms to 1h`, `from 1/h to 1000000/s`.
    static func describe(_ bounds: Bounds) -> String {
        switch bounds {
        case .whole(let range): "from \(range.lowerBound) to \(range.upperBound)"
        case .duration(let range): "from \(ConfigDuration.text(range.lowerBound)) to \(ConfigDuration.text(range.upperBound))"
        case .rate(let range): "from \(rateText(range.lowerBound)) to \(rateText(range.upperBound))"
        }
    }

    /// A rate in the unit that writes it as a whole number where one does (`1/h`, `20/s`).
    static func rateText(_ perSecond: Double) -> String {
        for (unit, seconds) in [("s", 1.0), ("m", 60.0), ("h", 3600.0)] {
            let count = perSecond * seconds
            if (count - count.rounded()).magnitude < 1e-9, count >= 1, let whole = Int(saturating: count) { return "\(whole)/\(unit)" }
        }
        return "\(perSecond)/s"
    }

    /// docs/configuration.md's "Ranges" table.
    static var markdownTable: String {
        var lines = ["| key | accepted |", "|---|---|"]
        for (key, bounds) in all {
            lines.append("| `\(key.replacing("*", with: "<name>"))` | \(describe(bounds)) |")
        }
        return lines.joined(separator: "\n")
    }
}
