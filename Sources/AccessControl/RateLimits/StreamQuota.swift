import Synchronization

/// How many live streams each client holds in the process (`server.maxStreamsPerClient`),
/// counted as the streams registry counts them (a `GET /events` stream counts once per
/// resource it carries), for every worker at once. A client is named as its rate limit
/// names it (``AccessGate``).
package final class StreamQuota: Sendable {
    private let held = Mutex<[String: Int]>([:])

    package init() {}

    /// Takes `count` streams for `client` if it would then hold at most `limit`.
    package func take(_ count: Int, for client: String, limit: Int) -> Bool {
        held.withLock { held in
            let now = held[client, default: 0]
            guard now + count <= limit else { return false }
            held[client] = now + count
            return true
        }
    }

    /// `client` closed `count` streams.
    package func give(_ count: Int, for client: String) {
        held.withLock { held in
            let left = held[client, default: 0] - count
            held[client] = left > 0 ? left : nil
        }
    }

    func streams(of client: String) -> Int { held.withLock { $0[client, default: 0] } }
}
