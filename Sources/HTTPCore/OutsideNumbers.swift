/// The rule for numbers from outside the process (a token's `exp`, an upstream's header, a
/// client's header, a value read from Redis, a setting): they meet arithmetic and
/// conversions only through these, and each of these clamps, saturates or refuses (nil).
/// None traps, whatever the number: 0, −1, 2^53, 2^63, 2^64, 1e308, ±inf, NaN.
///
/// Swift traps on an integer overflow and on converting a `Double` that does not fit, and a
/// trap ends every worker of the process: one stream opened with a token whose `exp` is the
/// year 9999 did exactly that (`Int64(left * 1e9)`).
///
/// ```swift
/// let wait = Duration.clamped(seconds: exp - now, to: .zero ... .seconds(86_400))
/// let capacity = interval.multipliedSaturated(by: Int64(burst))
/// let nanoseconds = Int64(saturating: seconds * 1e9, rounding: .up)      // nil only for NaN
/// ```
extension FixedWidthInteger {
    /// `self + other`, or the end of the type's range the sum passes.
    @inlinable
    public func addingSaturated(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > .zero ? .max : .min
    }

    /// `self - other`, or the end of the type's range the difference passes.
    @inlinable
    public func subtractingSaturated(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > .zero ? .min : .max
    }

    /// `self * other`, or the end of the type's range the product passes.
    @inlinable
    public func multipliedSaturated(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < .zero) != (other < .zero) ? .min : .max
    }

    /// `value` rounded by `rule`, clamped into the type's range (±inf to its ends); nil for
    /// NaN, which names no number at all.
    @inlinable
    public init?(saturating value: Double, rounding rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) {
        guard !value.isNaN else { return nil }
        let rounded = value.rounded(rule)
        // `Double(Self.max)` rounds up to a power of two the type cannot hold: `>=` sends it to
        // `.max`; `Double(Self.min)` is exact (zero, or −2^(bits−1)).
        if rounded >= Double(Self.max) {
            self = .max
        } else if rounded <= Double(Self.min) {
            self = .min
        } else {
            self.init(rounded)
        }
    }

    /// The value clamped into `range`.
    @inlinable
    public func clamped(to range: ClosedRange<Self>) -> Self {
        Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }
}

extension Duration {
    /// `seconds` (a count from outside: a token's time left, a header's delta) as a duration
    /// clamped into `range`, rounded up to whole nanoseconds: a timer set from it fires no
    /// earlier than it says. NaN is the range's lower bound.
    public static func clamped(seconds: Double, to range: ClosedRange<Duration>) -> Duration {
        guard let nanoseconds = Int64(saturating: seconds * 1e9, rounding: .up) else { return range.lowerBound }
        return min(max(.nanoseconds(nanoseconds), range.lowerBound), range.upperBound)
    }

    /// The duration in whole milliseconds rounded down (negative: 0), saturating at `UInt64.max`.
    public var wholeMilliseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds).multipliedSaturated(by: 1000).addingSaturated(UInt64(attoseconds / 1_000_000_000_000_000))
    }

    /// The duration in whole seconds rounded up (negative: 0), saturating at `Int.max`: what a
    /// `Retry-After` header can say.
    public var wholeSecondsRoundedUp: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        return Int(seconds).addingSaturated(attoseconds > 0 ? 1 : 0)
    }
}
