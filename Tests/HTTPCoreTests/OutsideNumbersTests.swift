import HTTPCore
import Testing

/// The rule for numbers from outside: saturate, clamp or refuse, never trap. Each helper is
/// fed the numbers that end a Swift process when they meet `Int64(…)` or `+`.
@Suite("Numbers from outside: saturating and clamping conversions")
struct OutsideNumbersTests {
    /// 0, −1, 2^53, 2^63, 2^64, 1e308, ±inf and their negatives, as a token's claims or a
    /// header's value may hold them.
    static let doubles: [Double] = [0, -1, 0x1p53, 0x1p63, 0x1p64, 1e308, -1e308, .infinity, -.infinity, .greatestFiniteMagnitude]

    @Test("Int64(saturating:) clamps every double into Int64's range and refuses NaN")
    func saturatingConversion() {
        #expect(Int64(saturating: .nan) == nil)
        #expect(Int64(saturating: 0x1p63) == .max)
        #expect(Int64(saturating: 0x1p64) == .max)
        #expect(Int64(saturating: 1e308) == .max)
        #expect(Int64(saturating: .infinity) == .max)
        #expect(Int64(saturating: -0x1p63) == .min)
        #expect(Int64(saturating: -.infinity) == .min)
        #expect(Int64(saturating: 0x1p53) == 1 << 53)
        #expect(Int64(saturating: -1) == -1)
        #expect(Int64(saturating: 2.5, rounding: .up) == 3)
        #expect(UInt64(saturating: -1) == 0)
        #expect(UInt64(saturating: 0x1p64) == .max)
        for value in Self.doubles {
            _ = Int64(saturating: value)
            _ = Int32(saturating: value)
            _ = UInt64(saturating: value, rounding: .down)
        }
    }

    @Test("adding, subtracting and multiplying saturate at the ends of the type")
    func saturatingArithmetic() {
        #expect(Int64.max.addingSaturated(1) == .max)
        #expect(Int64.min.addingSaturated(-1) == .min)
        #expect(Int64(5).addingSaturated(-7) == -2)
        #expect(Int64.min.subtractingSaturated(1) == .min)
        #expect(Int64.max.subtractingSaturated(-1) == .max)
        #expect(Int64(3_600_000_000).multipliedSaturated(by: 3_000_000_000) == .max)
        #expect(Int64(-2).multipliedSaturated(by: .max) == .min)
        #expect(Int64(-2).multipliedSaturated(by: .min) == .max)
        #expect(UInt64.max.addingSaturated(1) == .max)
        #expect(UInt64(6).multipliedSaturated(by: 7) == 42)
        #expect(Int(12).clamped(to: 0...10) == 10)
        #expect(Int(-12).clamped(to: 0...10) == 0)
    }

    @Test("a duration from outside seconds is clamped into its range; NaN is its lower bound; a fraction of a nanosecond rounds up")
    func clampedDurations() {
        let day = Duration.seconds(86_400)
        for value in Self.doubles + [.nan] {
            let duration = Duration.clamped(seconds: value, to: .zero ... day)
            #expect(duration >= .zero && duration <= day, "\(value)")
        }
        #expect(Duration.clamped(seconds: 253_402_300_799 - 1_800_000_000, to: .zero ... day) == day)
        #expect(Duration.clamped(seconds: .nan, to: .seconds(1) ... day) == .seconds(1))
        #expect(Duration.clamped(seconds: -5, to: .zero ... day) == .zero)
        #expect(Duration.clamped(seconds: 1.5e-10, to: .zero ... day) == .nanoseconds(1))
        #expect(Duration.clamped(seconds: 2.5, to: .zero ... day) == .milliseconds(2500))
    }

    @Test("whole milliseconds and whole seconds of any duration, negative ones as 0")
    func wholeUnits() {
        #expect(Duration.milliseconds(1500).wholeMilliseconds == 1500)
        #expect(Duration.seconds(-3).wholeMilliseconds == 0)
        #expect(Duration.seconds(Int64.max).wholeMilliseconds == .max)
        #expect(Duration.milliseconds(1500).wholeSecondsRoundedUp == 2)
        #expect(Duration.seconds(2).wholeSecondsRoundedUp == 2)
        #expect(Duration.seconds(-2).wholeSecondsRoundedUp == 0)
        #expect((Duration.seconds(Int64.max) + .milliseconds(1)).wholeSecondsRoundedUp == .max)
    }
}
