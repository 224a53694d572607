/// The nonces of the messages a replica acted on lately (a control request's tag, a
/// reload's nonce), each until its message would be refused as stale anyway: a genuine
/// message played back within that window is told apart and dropped
/// (``FleetRejection/replayed``). Bounded by the genuine messages of one window; expired
/// entries go as it grows.
struct RecentNonces {
    private var expiries: [UInt64: UInt64] = [:]
    private var pruneAt = 64

    /// Whether `nonce` is new (then remembered until `expiry`), at time `now` (milliseconds).
    mutating func firstSight(of nonce: UInt64, until expiry: UInt64, now: UInt64) -> Bool {
        if expiries.count >= pruneAt {
            expiries = expiries.filter { $0.value > now }
            pruneAt = max(64, 2 * expiries.count)
        }
        if let known = expiries[nonce], known > now { return false }
        expiries[nonce] = expiry
        return true
    }
}
