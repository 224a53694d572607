import Aggregation
import Glibc
import Redis
import UpstreamClient

/// What settings take: whole numbers, durations and rates within their ranges, true or
/// false, text, one of a few words, lists, addresses. Each type reads the file's value and
/// the environment's (or the command line's) text alike, and says what it refused the same
/// way wherever it was written: `t.yaml: server.workers: …` or `TRIBUTARY_WORKERS: …`.
///
/// Why every number has a range, and not only a minimum: a setting meets arithmetic (a rate
/// limit's burst times its interval, a backoff doubled per retry, a buffer allocated at its
/// size) and Swift traps on overflow; `rateLimit: {rate: 1/h, burst: 3000000000}` ended the
/// process that way. Each upper bound is far above any sensible value and far below any
/// overflow. A test sets every number to both ends, one past each, 2^63, 2^64, 1e308, inf,
/// nan, −1 and text.
extension SettingType {
    /// A whole number within `range`; anything else (a fraction, text, a number too large for
    /// any integer) fails naming the range and what was found.
    static func whole(_ range: ClosedRange<Int>) -> SettingType<Int> {
        SettingType<Int>(bounds: .whole(range)) { text, location throws(ConfigurationError) in
            guard let value = Int(text), range.contains(value) else {
                throw ConfigurationError(location, "expected a whole number \(Setting.describe(.whole(range))), found \"\(text)\"")
            }
            return value
        }
    }

    /// A duration (`250ms`, `5s`, `1m`, `1h`) within `range`.
    static func duration(_ range: ClosedRange<Duration>) -> SettingType<Duration> {
        SettingType<Duration>(bounds: .duration(range), show: { "`\(ConfigDuration.text($0))`" }) { text, location throws(ConfigurationError) in
            guard let value = ConfigDuration.parse(text), range.contains(value) else {
                throw ConfigurationError(
                    location, "expected a duration such as 250ms, 5s or 1m \(Setting.describe(.duration(range))), found \"\(text)\"")
            }
            return value
        }
    }

    /// Requests per second, written `20/s`, `600/m` or `3600/h`, within `range`.
    static func rate(_ range: ClosedRange<Double>) -> SettingType<Double> {
        SettingType<Double>(bounds: .rate(range)) { text, location throws(ConfigurationError) in
            guard let perSecond = ConfigDuration.rate(text), range.contains(perSecond) else {
                throw ConfigurationError(
                    location, "expected requests per unit such as 20/s, 600/m or 3600/h \(Setting.describe(.rate(range))), found \"\(text)\"")
            }
            return perSecond
        }
    }

    /// `upstream`, or a duration within `range` (`details.cacheFor`).
    static func detailFreshness(_ range: ClosedRange<Duration>) -> SettingType<DetailFreshness> {
        let duration = SettingType<Duration>.duration(range)
        return SettingType<DetailFreshness>(
            bounds: .duration(range),
            show: { freshness in
                switch freshness {
                case .upstream: "`upstream`"
                case .fixed(let value): "`\(ConfigDuration.text(value))`"
                }
            }
        ) { text, location throws(ConfigurationError) in
            if text == "upstream" { return .upstream }
            do throws(ConfigurationError) {
                return try duration.parse(text, location).map(DetailFreshness.fixed)
            } catch {
                throw ConfigurationError(location, "expected upstream or " + error.problem.replacing("expected ", with: "", maxReplacements: 1))
            }
        }
    }

    /// `true` or `false`, exactly.
    static var boolean: SettingType<Bool> {
        SettingType<Bool> { text, location throws(ConfigurationError) in
            switch text {
            case "true": return true
            case "false": return false
            default: throw ConfigurationError(location, "expected true or false, found \"\(text)\"")
            }
        }
    }

    /// Any text, as written.
    static var text: SettingType<String> {
        SettingType<String> { text, _ in text }
    }

    /// Text that is not empty; `problem` says what it should be.
    static func nonEmptyText(_ problem: String) -> SettingType<String> {
        SettingType<String> { text, location throws(ConfigurationError) in
            guard !text.isEmpty else { throw ConfigurationError(location, problem) }
            return text
        }
    }

    /// Text whose absence is written empty: `""` sets none.
    static var optionalText: SettingType<String?> {
        SettingType<String?>(show: { $0.map { "`\($0)`" } ?? "none" }) { text, _ in .some(text.isEmpty ? nil : text) }
    }

    /// One of `Choice`'s raw values, refused naming them (`described`, or one of them in
    /// their declared order).
    static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _: Choice.Type, described: String? = nil
    ) -> SettingType<Choice> where Choice.RawValue == String {
        let known = described ?? "one of " + Choice.allCases.map(\.rawValue).joined(separator: ", ")
        return SettingType<Choice>(show: { "`\($0.rawValue)`" }) { text, location throws(ConfigurationError) in
            guard let value = Choice(rawValue: text) else {
                throw ConfigurationError(location, "expected \(known), found \"\(text)\"")
            }
            return value
        }
    }

    /// One of `values`, refused naming them in order.
    static func oneOf(_ values: Set<String>) -> SettingType<String> {
        SettingType<String> { text, location throws(ConfigurationError) in
            guard values.contains(text) else {
                throw ConfigurationError(location, "expected one of \(values.sorted().joined(separator: ", ")), found \"\(text)\"")
            }
            return text
        }
    }

    /// Where in a JSON answer something is, as a dot path (empty: the whole body).
    static var jsonPath: SettingType<JSONPath> {
        SettingType<JSONPath>(show: { $0.members.isEmpty ? "whole body" : "`\($0)`" }) { text, _ in JSONPath(text) }
    }

    /// A list: in the file a YAML list (a single value is a list of one), in the environment
    /// comma-separated (spaces around each trimmed, empty ones dropped); each element read by
    /// `element`.
    static func list<Element: Sendable>(
        of element: @escaping @Sendable (String, String) throws(ConfigurationError) -> Element
    ) -> SettingType<[Element]> {
        var type = SettingType<[Element]>(
            show: { $0.isEmpty ? "`[]`" : "`[\($0.map { "\($0)" }.joined(separator: ", "))]`" },
            read: { section, key throws(ConfigurationError) in
                guard let texts = try section.strings(key) else { return nil }
                var values: [Element] = []
                for text in texts { values.append(try element(text, section.location(key))) }
                return values
            },
            parse: { text, location throws(ConfigurationError) in
                var values: [Element] = []
                for part in text.split(separator: ",").map({ String($0).trimmingSpaces }) where !part.isEmpty {
                    values.append(try element(part, location))
                }
                return values
            })
        type.environmentForm = "comma-separated"
        return type
    }

    /// The same values, optional: a field that may hold none (`staleIfError`).
    var optional: SettingType<Value?> {
        let (parse, read, show) = (self.parse, self.read, self.show)
        return SettingType<Value?>(
            bounds: bounds, show: { $0.map(show) ?? "none" },
            read: { section, key throws(ConfigurationError) in try read(section, key).map { .some($0) } },
            parse: { text, location throws(ConfigurationError) in try parse(text, location).map { .some($0) } })
    }
}

// MARK: - Tributary's own values

extension SettingType {
    /// `HOST:PORT` (`[::1]:8080` for IPv6).
    static var listenAddress: SettingType<ListenAddress> {
        SettingType<ListenAddress> { text, location throws(ConfigurationError) in
            guard let address = ListenAddress(text) else { throw ConfigurationError(location, "expected HOST:PORT, found \"\(text)\"") }
            return address
        }
    }

    /// A worker count: a whole number within `range`, or `auto` for one per online processor
    /// (within the range too).
    static func workers(_ range: ClosedRange<Int>) -> SettingType<Int> {
        SettingType<Int>(bounds: .whole(range)) { text, location throws(ConfigurationError) in
            if text == "auto" { return max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))).clamped(to: range) }
            guard let count = Int(text), range.contains(count) else {
                throw ConfigurationError(location, "expected a whole number \(Setting.describe(.whole(range))) or auto, found \"\(text)\"")
            }
            return count
        }
    }

    /// A base URL, `http://` or `https://`.
    static var baseURL: SettingType<BaseURL> {
        SettingType<BaseURL> { text, location throws(ConfigurationError) in
            do throws(BaseURLError) {
                return try BaseURL(text)
            } catch {
                throw ConfigurationError(location, error.description)
            }
        }
    }

    /// `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`; empty is unset.
    static var redis: SettingType<RedisEndpoint> {
        SettingType<RedisEndpoint> { text, location throws(ConfigurationError) in
            guard !text.isEmpty else { return nil }
            do throws(RedisEndpointError) {
                return try RedisEndpoint(text)
            } catch {
                throw ConfigurationError(location, error.description)
            }
        }
    }

    /// A fleet's shared secret (``ClusterSecret``); empty is unset.
    static var clusterSecret: SettingType<ClusterSecret?> {
        SettingType<ClusterSecret?>(show: { $0 == nil ? "none" : "<secret>" }) { text, location throws(ConfigurationError) in
            text.isEmpty ? nil : .some(try ClusterSecret(text, at: location))
        }
    }
}

extension Setting {
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
}
