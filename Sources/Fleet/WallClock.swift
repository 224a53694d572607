import Glibc
import HTTPCore

/// Wall-clock time in milliseconds since 1970, the time replicas of a fleet stamp what they
/// write to Redis with (their clocks are assumed synchronised to well under a lease's TTL).
enum WallClock {
    static func milliseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec / 1_000_000)
    }

    /// `duration` in whole milliseconds (negative: 0).
    static func milliseconds(_ duration: Duration) -> UInt64 {
        duration.wholeMilliseconds
    }
}
