import HTTPCore

/// Durations in configuration: a number and a unit, `250ms`, `5s`, `1.5s`, `2m`, `1h`, at
/// most ``longest`` (a huge number would not fit in a `Duration` at all; each key's own
/// range, in ``SettingRanges``, is narrower). Rates are written with the same units:
/// `20/s`, `600/m`, `3600/h`.
package enum ConfigDuration {
    static let longest: Duration = .seconds(366 * 24 * 3600)

    private static let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]

    package static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingSpaces
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            guard let value = Double(trimmed.dropLast(unit.suffix.count)), value >= 0, value.isFinite,
                  value * unit.seconds <= Double(longest.components.seconds) else { return nil }
            return .nanoseconds(Int64(saturating: value * unit.seconds * 1e9) ?? 0)
        }
        return nil
    }

    /// `duration` as the file would write it, in the largest unit that holds it whole:
    /// `300ms`, `10s`, `1h`, `24h`.
    static func text(_ duration: Duration) -> String {
        let milliseconds = duration.wholeMilliseconds
        for (suffix, size) in [("h", UInt64(3_600_000)), ("m", 60_000), ("s", 1000)] where milliseconds > 0 && milliseconds % size == 0 {
            return "\(milliseconds / size)\(suffix)"
        }
        return milliseconds == 0 ? "0s" : "\(milliseconds)ms"
    }

    /// `20/s`, `600/m`, `3600/h` as requests per second (any positive finite count; the key's
    /// range decides the rest).
    static func rate(_ text: String) -> Double? {
        let parts = text.trimmingSpaces.split(separator: "/")
        let units: [Substring: Double] = ["s": 1, "m": 60, "h": 3600]
        guard parts.count == 2, let count = Double(parts[0]), count.isFinite, count > 0, let unit = units[parts[1]] else { return nil }
        return count / unit
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
