/// The Lua scripts the fleet runs in Redis, each atomically: they read and write a lease, or
/// publish a state, in one step no other replica can come between.
extension ClusterAgent {
    // A lease's value is `<MAC> <time> <replica>` (``FleetSeal``); the scripts cannot check a
    // MAC, so they know a replica's own lease by its id at the end, and the replica checks
    // every other holder's seal itself. A key of another type than its own, or a lease longer
    // than any genuine one (written by someone else), counts as absent.

    /// KEYS: lease, interest. ARGV: replica, its lease value, lease TTL (ms), interested (0/1),
    /// a holder's value this replica found invalid ('' if none).
    /// Notes this replica's interest (it expires with the lease TTL), then: a holder renews
    /// the lease (a new value) while any replica is interested and releases it otherwise; an
    /// interested replica takes a free lease, or one whose value it found invalid, or follows
    /// its holder (answered with the holder's value, for the replica to check). Times are
    /// Redis's own.
    static let leaseScript = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local ttl = tonumber(ARGV[3])
        if redis.call('TYPE', KEYS[2])['ok'] ~= 'zset' then redis.call('DEL', KEYS[2]) end
        if ARGV[4] == '1' then
          redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
          redis.call('PEXPIRE', KEYS[2], ttl * 3)
        end
        redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
        local holder = redis.pcall('GET', KEYS[1])
        if type(holder) ~= 'string' or #holder > \(maximumValueBytes) then holder = false end
        local suffix = ' ' .. ARGV[1]
        if holder and string.sub(holder, -#suffix) == suffix then
          if ARGV[4] == '1' or redis.call('ZCARD', KEYS[2]) > 0 then
            redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
            return {'lead'}
          end
          redis.call('DEL', KEYS[1])
          return {'idle'}
        end
        if ARGV[4] ~= '1' then return {'idle'} end
        if holder and holder ~= ARGV[5] then return {'follow', holder} end
        redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
        return {'lead'}
        """

    /// KEYS: a key. ARGV: the most bytes to read. Its value when a string of at most that
    /// many bytes; its length when longer (a replica reads only what it could use, whatever
    /// someone wrote there); nil when absent or of another type.
    static let boundedGetScript = """
        local length = redis.pcall('STRLEN', KEYS[1])
        if type(length) ~= 'number' or length == 0 then return false end
        if length > tonumber(ARGV[1]) then return length end
        return redis.call('GET', KEYS[1])
        """

    /// KEYS: lease, latest, states. ARGV: replica, sealed state, latest's lifetime (ms). 1 when sent.
    static let publishScript = """
        local holder = redis.pcall('GET', KEYS[1])
        local suffix = ' ' .. ARGV[1]
        if type(holder) ~= 'string' or string.sub(holder, -#suffix) ~= suffix then return 0 end
        redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
        redis.call('PUBLISH', KEYS[3], ARGV[2])
        return 1
        """

    /// KEYS: lease. ARGV: replica. Deletes the lease if this replica holds it.
    static let releaseScript = """
        local holder = redis.pcall('GET', KEYS[1])
        local suffix = ' ' .. ARGV[1]
        if type(holder) == 'string' and string.sub(holder, -#suffix) == suffix then return redis.call('DEL', KEYS[1]) end
        return 0
        """
}
