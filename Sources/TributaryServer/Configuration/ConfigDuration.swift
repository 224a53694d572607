/// Durations in configuration: a number and a unit, `250ms`, `5s`, `1.5s`, `2m`, `1h`, at
/// most ``longest`` (no timeout or interval of a service is longer, and a huge number would
/// not fit in a `Duration` at all).
enum ConfigDuration {
    static let longest: Duration = .seconds(366 * 24 * 3600)

    static func parse(_ text: String) -> Duration? {
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        let trimmed = text.trimmingSpaces
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            guard let value = Double(trimmed.dropLast(unit.suffix.count)), value >= 0, value.isFinite,
                  value * unit.seconds <= Double(longest.components.seconds) else { return nil }
            return .nanoseconds(Int64((value * unit.seconds * 1e9).rounded()))
        }
        return nil
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
