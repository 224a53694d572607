import EventLoop
import Redis

/// A fleet's rate limits: every replica decides through one Redis script (``script``: GCRA
/// on Redis's own clock, one round trip per decision), so a client's limit holds across
/// replicas. While Redis cannot be reached (not connected, or a decision that fails or
/// times out) each replica decides alone with its process's ``LocalRateLimiter``: limits
/// stay on, per replica. One per worker, on its loop, with a Redis connection of its own
/// (a decision never hops threads). Loop-confined.
///
/// A client is named in Redis by a digest of its subject or address, never by either itself
/// or by its token.
final class FleetRateLimiter {
    /// How long a decision may take before the local limiter decides instead.
    static let decisionTimeout: Duration = .milliseconds(250)

    private let redis: RedisClient
    private let prefix: String
    private let local: LocalRateLimiter

    init(redis endpoint: RedisEndpoint, keyPrefix: String, loop: EventLoop, local: LocalRateLimiter) {
        redis = RedisClient(
            loop: loop, endpoint: endpoint, configuration: .init(commandTimeout: Self.decisionTimeout))
        prefix = keyPrefix
        self.local = local
    }

    var isConnected: Bool { redis.state == .connected }

    /// Decides one request of the client named `digest` in Redis (`local` in the process's
    /// limiter) under `policy`; `done` runs on the loop.
    func decide(
        _ digest: String, local client: String, policy: String, _ gcra: GCRA, _ done: @escaping (RateDecision) -> Void
    ) {
        guard isConnected else { return done(local.decide(client, policy: policy, gcra)) }
        let key = "\(prefix):ratelimit:\(policy):\(digest)"
        let local = self.local
        redis.send(RedisCommand("EVAL", Self.script, 1, key, Int(gcra.interval), Int(gcra.capacity))) { result in
            guard case .success(let reply) = result, let answer = reply.array, answer.count == 2,
                  let admitted = answer[0].integer, let ahead = answer[1].integer, ahead >= 0 else {
                return done(local.decide(client, policy: policy, gcra))
            }
            done(gcra.decision(admitted: admitted == 1, ahead: ahead))
        }
    }

    /// KEYS: the client's TAT. ARGV: interval, capacity (µs). Returns {admitted (0/1), how
    /// far ahead of now the TAT is (µs; refused: the one it would have set)}. A stored value
    /// that is not a number counts as none; one further ahead than a whole burst (no replica
    /// writes that) is taken as a whole burst, so a forged value cannot refuse a client for
    /// longer than one window.
    static let script = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local interval = tonumber(ARGV[1])
        local capacity = tonumber(ARGV[2])
        local tat = tonumber(redis.call('GET', KEYS[1]) or '') or now
        if tat < now then tat = now end
        if tat > now + capacity then tat = now + capacity end
        local nextTat = tat + interval
        if nextTat - now > capacity then return {0, nextTat - now} end
        redis.call('SET', KEYS[1], string.format('%.0f', nextTat), 'PX', math.ceil((nextTat - now) / 1000) + 1)
        return {1, nextTat - now}
        """
}
