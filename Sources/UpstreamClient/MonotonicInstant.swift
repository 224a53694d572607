import Glibc

/// A reading of the system's monotonic clock, in nanoseconds: what the upstream client times
/// its calls, their deadlines and its idle connections with.
///
/// Why not `ContinuousClock.Instant`: it is resilient (its layout is private to the
/// concurrency library), so every copy, store or destroy of one, or of an optional one, goes
/// through its type's value witnesses, and reading the clock through `swift_get_time`, several
/// times in every upstream call (issue 16). This is an integer, read with one `clock_gettime`.
/// Instants of different processes cannot be compared; those of the loops of one process can
/// (a lent connection's idle start travels with it).
struct MonotonicInstant: Comparable, Sendable {
    let nanoseconds: Int64

    static var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
    }

    static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `nanoseconds` after this one.
    func advanced(byNanoseconds nanoseconds: Int64) -> MonotonicInstant {
        let (sum, overflow) = self.nanoseconds.addingReportingOverflow(nanoseconds)
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    /// Nanoseconds from `earlier` to this instant.
    func nanoseconds(since earlier: MonotonicInstant) -> Int64 {
        nanoseconds &- earlier.nanoseconds
    }

    /// `duration` in whole nanoseconds (a longer one than an `Int64` holds, some 292 years, as
    /// the most it holds; a negative one as zero). Worked out once per timeout or connection,
    /// not per call: `Duration`'s components are 128-bit arithmetic.
    static func nanoseconds(of duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowAgain ? .max : total
    }
}
