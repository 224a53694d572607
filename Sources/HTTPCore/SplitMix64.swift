/// SplitMix64 (Steele, Lea and Flood, 2014): a Weyl sequence stepped by ``gamma`` and mixed by
/// a bijection. Trace and span ids mix an atomic sequence with it (``TraceContext``); tests
/// draw seeded inputs from it, the same on every run. Not for secrets.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The sequence's step: 2⁶⁴ divided by the golden ratio, odd.
    public static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

    public var state: UInt64

    public init(state: UInt64) {
        self.state = state
    }

    public mutating func next() -> UInt64 {
        state &+= Self.gamma
        return Self.mix(state)
    }

    /// The mixing bijection: distinct inputs give distinct outputs.
    @inlinable
    public static func mix(_ value: UInt64) -> UInt64 {
        var mixed = value
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
