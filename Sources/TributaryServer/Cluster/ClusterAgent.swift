import Aggregation
import CoreMetrics
import EventLoop
import HTTPServer
import Logging
import OpenCombine
import Redis

/// One replica's member of the fleet: the process's connection to Redis, on the first
/// worker's loop (hiredis on that loop's own libevent). It
///
/// - decides, every third of `cluster.leaseTTL`, the role of each shared live resource
///   (``FleetLiveResource``): lead it while holding its lease, follow the leader's states, or
///   rest when no replica has subscribers; and runs everything alone while Redis is away;
///   states carry when they were produced, so no replica steps back to older data;
/// - keeps where each of this replica's streams lives in Redis (under the digest of its id),
///   forwards the control of a stream it does not hold to the replica that does, and applies
///   the controls other replicas forward to it;
/// - spreads reloads to every replica.
///
/// ```
///  replica A (lease holder)                Redis                      replica B
///  pipeline ─▶ state ─▶ EVAL publish ──▶ latest, PUBLISH states ──▶ follower ─▶ B's subscribers
///  A's streams ◀── apply ◀── PUBLISH replica:A ◀── GET stream:<digest> ◀── POST /streams/{id}/… on B
/// ```
///
/// Metrics: `tributary_cluster_connected` (0 or 1), `tributary_cluster_lease_held{resource}`.
/// Loop-confined.
final class ClusterAgent {
    /// How long a forwarded control may take before its answer is 504 `cluster_timeout`.
    static let controlTimeout: Duration = .seconds(2)
    /// How long a stream's location lives in Redis unless renewed (every third of it).
    static let streamKeyLifetime: Duration = .seconds(3600)
    /// How long a resource's latest state stays in Redis after its last update: a first
    /// subscriber shows it at once, even after the fleet was idle a while.
    static let latestLifetime: Duration = .seconds(3600)

    /// This replica's id: 128 random bits, new at every start.
    let replica = StreamID.random().description
    let keys: ClusterKeys
    let settings: Configuration.Cluster
    private let loop: EventLoop
    private let redis: RedisClient
    private let directory: StreamDirectory
    private let logger: Logger
    private var resources: [String: FleetLiveResource] = [:]
    /// This replica's live streams, by the digest Redis knows them by.
    private var streams: [String: StreamID] = [:]
    private var pending: [UInt64: (answer: (Result<Void, HTTPError>) -> Void, deadline: LoopTimer)] = [:]
    private var nextTag: UInt64 = 0
    /// Resources whose lease script is in flight (one at a time each).
    private var ticking: Set<String> = []
    private var ticker: LoopTimer!
    private var streamRenewal: LoopTimer!
    private var subscriptions: [AnyCancellable] = []
    private var reportedUnreachable = false
    private let connectedGauge = Gauge(label: "tributary_cluster_connected")

    init(settings: Configuration.Cluster, loop: EventLoop, directory: StreamDirectory, logger: Logger) {
        self.settings = settings
        self.loop = loop
        self.directory = directory
        self.logger = logger
        keys = ClusterKeys(prefix: settings.keyPrefix)
        redis = RedisClient(loop: loop, endpoint: settings.redis, configuration: .init(commandTimeout: .seconds(1)))
        connectedGauge.record(0)
        ticker = LoopTimer(loop: loop) { [unowned self] in tickAll() }
        ticker.scheduleRepeating(every: settings.leaseTTL / 3)
        streamRenewal = LoopTimer(loop: loop) { [unowned self] in registerAllStreams() }
        streamRenewal.scheduleRepeating(every: Self.streamKeyLifetime / 3)
        subscriptions = [
            redis.states.sink { [unowned self] state in redisChanged(to: state) },
            redis.failures.sink { [unowned self] error in redisFailed(error) },
            redis.subscribe(to: keys.replica(replica)).sink { [unowned self] event in
                if let payload = event.payload, let message = ClusterMessage.decodeAddressed(payload) { received(message) }
            },
            redis.subscribe(to: keys.reloads).sink { [unowned self] event in
                if let payload = event.payload { reloaded(String(decoding: payload, as: UTF8.self)) }
            },
        ]
    }

    var isConnected: Bool { redis.state == .connected }

    /// Makes `local` a resource of the whole fleet.
    func adopt(_ local: LiveResource) -> FleetLiveResource {
        let fleet = FleetLiveResource(local: local, agent: self)
        resources[local.name] = fleet
        return fleet
    }

    /// Stops sharing resource `name` (a configuration reload removed or changed it): its
    /// pipeline stops here and, if this replica leads it, its lease goes now so a replica
    /// that still serves it (another configuration) takes over without waiting.
    func release(_ name: String) {
        guard let resource = resources.removeValue(forKey: name) else { return }
        if case .leading = resource.role, isConnected {
            redis.send(RedisCommand("EVAL", Self.releaseScript, 1, keys.lease(name), replica)) { _ in }
        }
        resource.become(.idle)
    }

    /// Leaves the fleet (shutdown): leases go now rather than when they expire, and this
    /// replica's streams are forgotten. Best effort: Redis may not answer in time.
    func leave() {
        ticker.cancel()
        guard isConnected else { return }
        for (name, resource) in resources {
            if case .leading = resource.role {
                redis.send(RedisCommand("EVAL", Self.releaseScript, 1, keys.lease(name), replica)) { _ in }
            }
        }
        for digest in streams.keys { redis.send(RedisCommand("DEL", keys.stream(digest: digest))) { _ in } }
    }

    // MARK: - Redis coming and going

    private func redisChanged(to state: RedisClient.State) {
        connectedGauge.record(state == .connected ? 1 : 0)
        switch state {
        case .connected:
            reportedUnreachable = false
            logger.info("cluster: joined the fleet", metadata: ["redis": "\(settings.redis)", "replica": "\(replica)"])
            registerAllStreams()
            tickAll()
        case .disconnected:
            logger.warning("cluster: lost Redis, running alone until it is back", metadata: [
                "redis": "\(settings.redis)", "reason": "\(redis.lastFailure?.detail ?? "unknown")",
            ])
            reportedUnreachable = true
            for resource in resources.values { runAlone(resource) }
            for tag in Array(pending.keys) { complete(tag, .failure(Self.unavailable)) }
        }
    }

    /// Redis unreachable from the start says so once (later failures come with a state change).
    private func redisFailed(_ error: RedisError) {
        guard !reportedUnreachable, !isConnected else { return }
        reportedUnreachable = true
        logger.warning("cluster: cannot reach Redis, running alone until it answers", metadata: [
            "redis": "\(settings.redis)", "reason": "\(error.detail)",
        ])
    }

    private func runAlone(_ resource: FleetLiveResource) {
        resource.become(resource.subscribers > 0 ? .standalone : .idle)
    }

    // MARK: - Leases

    /// A resource's subscribers came or all went: decide its role now, not at the next tick.
    func interestChanged(in name: String) {
        guard let resource = resources[name] else { return }
        if isConnected { tick(resource) } else { runAlone(resource) }
    }

    private func tickAll() {
        for resource in resources.values {
            if isConnected { tick(resource) } else { runAlone(resource) }
        }
    }

    /// Runs the lease script for `resource` and takes up the role it gives.
    private func tick(_ resource: FleetLiveResource) {
        let name = resource.name
        guard !ticking.contains(name) else { return }
        ticking.insert(name)
        let ttl = Self.milliseconds(settings.leaseTTL)
        let command = RedisCommand(
            "EVAL", Self.leaseScript, 2, keys.lease(name), keys.interest(name), replica, ttl, resource.subscribers > 0 ? 1 : 0)
        redis.send(command) { [unowned self] result in
            ticking.remove(name)
            guard resources[name] === resource else { return }  // released meanwhile
            guard case .success(let reply) = result, let answer = reply.array, let role = answer.first?.text else {
                if !isConnected { runAlone(resource) }
                return
            }
            switch role {
            case "lead":
                if case .leading = resource.role { return }
                logger.info("cluster: leading", metadata: ["resource": "\(name)"])
                resource.become(.leading)
            case "follow":
                if case .leading = resource.role { logger.info("cluster: lease lost, following", metadata: ["resource": "\(name)"]) }
                resource.become(.following)
            default:
                resource.become(.idle)
            }
        }
    }

    /// Sends a leader's state to the fleet: stored as the latest and published, only while
    /// this replica still holds the lease (a leader that lost it, unknowingly, is fenced off).
    func publish(_ name: String, state: LiveState, producedAt: UInt64) {
        let payload = ClusterMessage.encode(state, producedAt: producedAt)
        let command = RedisCommand(
            "EVAL", Self.publishScript, 3, keys.lease(name), keys.latest(name), keys.states(name),
            replica, payload, Self.milliseconds(Self.latestLifetime))
        redis.send(command) { [unowned self] result in
            if case .success(.integer(0)) = result, let resource = resources[name] { tick(resource) }
        }
    }

    /// Follows `name`'s leader: every state it publishes, and the latest at once (again after
    /// every reconnect, as what was published meanwhile is lost). Cancel to stop.
    func follow(_ name: String, _ take: @escaping (LiveState, UInt64) -> Void) -> AnyCancellable {
        redis.subscribe(to: keys.states(name)).sink { [unowned self] event in
            switch event {
            case .subscribed:
                redis.send(RedisCommand("GET", keys.latest(name))) { result in
                    guard case .success(let reply) = result, let bytes = reply.bytes,
                          let decoded = ClusterMessage.decodeState(bytes) else { return }
                    take(decoded.state, decoded.producedAt)
                }
            case .message(let bytes):
                if let decoded = ClusterMessage.decodeState(bytes) { take(decoded.state, decoded.producedAt) }
            }
        }
    }

    // MARK: - Reloads

    /// Reloads `name` for every subscriber of every replica (here only, while Redis is away).
    func reload(_ name: String) {
        guard isConnected else { return reloaded(name) }
        redis.send(RedisCommand("PUBLISH", keys.reloads, name)) { [unowned self] result in
            if case .failure = result { reloaded(name) }
        }
    }

    /// A reload reached this replica: a shared pipeline refreshes where it runs, and every
    /// stream of a resource with pipelines of their own reloads on its own worker.
    private func reloaded(_ name: String) {
        if let resource = resources[name] { return resource.reloadIfRunning() }
        for listing in directory.allListings {
            listing.loop.execute { listing.hub?.activate("reload", onEveryStreamOf: name) }
        }
    }

    // MARK: - Streams

    func streamOpened(_ id: StreamID) {
        let digest = ClusterKeys.streamDigest(id)
        streams[digest] = id
        if isConnected { register(digest) }
    }

    func streamClosed(_ id: StreamID) {
        let digest = ClusterKeys.streamDigest(id)
        guard streams.removeValue(forKey: digest) != nil, isConnected else { return }
        redis.send(RedisCommand("DEL", keys.stream(digest: digest))) { _ in }
    }

    private func register(_ digest: String) {
        let lifetime = Self.milliseconds(Self.streamKeyLifetime)
        redis.send(RedisCommand("SET", keys.stream(digest: digest), replica, "PX", lifetime)) { _ in }
    }

    private func registerAllStreams() {
        guard isConnected else { return }
        for digest in streams.keys { register(digest) }
    }

    /// Applies `control` to stream `id`, held by another replica: finds which in Redis, sends
    /// it there, and hands the holder's answer to `answer` (on this loop).
    ///
    /// A stream Redis does not know is looked up once more after ``relookupDelay``: a Redis
    /// that restarted empty learns where the streams are from every replica as it rejoins, a
    /// moment after it answers again.
    func forward(_ control: StreamControl, to id: StreamID, _ answer: @escaping (Result<Void, HTTPError>) -> Void) {
        guard isConnected else { return answer(.failure(Self.unavailable)) }
        let digest = ClusterKeys.streamDigest(id)
        let unknown = HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(id)")
        locate(digest, retrying: true) { [unowned self] holder in
            guard let holder else { return answer(.failure(unknown)) }
            guard holder != replica else { return answer(.failure(unknown)) }
            nextTag += 1
            let tag = nextTag
            let deadline = LoopTimer(loop: loop) { [unowned self] in
                complete(tag, .failure(HTTPError(
                    status: 504, code: "cluster_timeout",
                    message: "the replica holding stream \(id) did not answer within \(Self.controlTimeout)")))
            }
            deadline.schedule(after: Self.controlTimeout)
            pending[tag] = (answer, deadline)
            let request = ClusterMessage.ControlRequest(tag: tag, from: replica, stream: digest, control: control)
            redis.send(RedisCommand("PUBLISH", keys.replica(holder), ClusterMessage.encode(request))) { [unowned self] result in
                guard case .success(.integer(let receivers)) = result, receivers > 0 else {
                    // The holder is gone (a replica that died keeps its streams' keys a while).
                    redis.send(RedisCommand("DEL", keys.stream(digest: digest))) { _ in }
                    return complete(tag, .failure(unknown))
                }
            }
        } unavailable: {
            answer(.failure(Self.unavailable))
        }
    }

    /// How long a lookup that found no stream waits before asking Redis once more.
    static let relookupDelay: Duration = .milliseconds(150)

    /// The replica holding the stream with `digest` (nil: none), from Redis.
    private func locate(
        _ digest: String, retrying: Bool, _ found: @escaping (String?) -> Void, unavailable: @escaping () -> Void
    ) {
        redis.send(RedisCommand("GET", keys.stream(digest: digest))) { [unowned self] result in
            guard case .success(let reply) = result else { return unavailable() }
            if let holder = reply.text { return found(holder) }
            guard retrying else { return found(nil) }
            LoopTimer.fireAndForget(loop: loop, after: Self.relookupDelay) { [weak self] in
                self?.locate(digest, retrying: false, found, unavailable: unavailable)
            }
        }
    }

    private func received(_ message: ClusterMessage.Addressed) {
        switch message {
        case .reply(let reply):
            complete(reply.tag, reply.outcome)
        case .request(let request):
            let agent = LoopBound(self, loop: loop)
            let answer = { @Sendable (outcome: Result<Void, HTTPError>) in agent.value.reply(to: request, outcome) }
            guard let id = streams[request.stream], directory.apply(request.control, to: id, answeringOn: loop, answer) else {
                return reply(to: request, .failure(HTTPError(status: 404, code: "unknown_stream", message: "no live stream here")))
            }
        }
    }

    private func reply(to request: ClusterMessage.ControlRequest, _ outcome: Result<Void, HTTPError>) {
        let reply = ClusterMessage.ControlReply(tag: request.tag, outcome: outcome)
        redis.send(RedisCommand("PUBLISH", keys.replica(request.from), ClusterMessage.encode(reply))) { _ in }
    }

    private func complete(_ tag: UInt64, _ outcome: Result<Void, HTTPError>) {
        guard let entry = pending.removeValue(forKey: tag) else { return }
        entry.deadline.cancel()
        entry.answer(outcome)
    }

    static let unavailable = HTTPError(
        status: 503, code: "cluster_unavailable", message: "the stream is not on this replica, and the fleet cannot be reached to find it")

    private static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }

    // MARK: - Scripts (run atomically by Redis)

    /// KEYS: lease, interest. ARGV: replica, lease TTL (ms), interested (0/1).
    /// Notes this replica's interest (it expires with the lease TTL), then: a holder keeps the
    /// lease while any replica is interested and releases it otherwise; an interested replica
    /// takes a free lease or follows its holder. Times are Redis's own.
    static let leaseScript = """
        local t = redis.call('TIME')
        local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        local ttl = tonumber(ARGV[2])
        if ARGV[3] == '1' then
          redis.call('ZADD', KEYS[2], now + ttl, ARGV[1])
          redis.call('PEXPIRE', KEYS[2], ttl * 3)
        end
        redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
        local holder = redis.call('GET', KEYS[1])
        if holder == ARGV[1] then
          if ARGV[3] == '1' or redis.call('ZCARD', KEYS[2]) > 0 then
            redis.call('PEXPIRE', KEYS[1], ttl)
            return {'lead'}
          end
          redis.call('DEL', KEYS[1])
          return {'idle'}
        end
        if ARGV[3] ~= '1' then return {'idle'} end
        if holder then return {'follow'} end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
        return {'lead'}
        """

    /// KEYS: lease, latest, states. ARGV: replica, state, latest's lifetime (ms). 1 when sent.
    static let publishScript = """
        if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
        redis.call('PUBLISH', KEYS[3], ARGV[2])
        return 1
        """

    /// KEYS: lease. ARGV: replica. Deletes the lease if this replica holds it.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """
}

/// How any worker of the process reaches its ``ClusterAgent`` (on the first worker's loop).
struct ClusterLink: Sendable {
    let agent: LoopBound<ClusterAgent>

    func forward(
        _ control: StreamControl, to id: StreamID, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) {
        let agent = self.agent
        agent.loop.execute {
            agent.value.forward(control, to: id) { outcome in loop.execute { answer(outcome) } }
        }
    }

    func streamOpened(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamOpened(id) }
    }

    func streamClosed(_ id: StreamID) {
        let agent = self.agent
        agent.loop.execute { agent.value.streamClosed(id) }
    }

    func reload(_ resource: String) {
        let agent = self.agent
        agent.loop.execute { agent.value.reload(resource) }
    }

    /// Stops sharing resource `name` (a reload removed or changed it).
    func release(_ name: String) {
        let agent = self.agent
        agent.loop.execute { agent.value.release(name) }
    }

    /// Leaves the fleet (shutdown).
    func leave() {
        let agent = self.agent
        agent.loop.execute { agent.value.leave() }
    }
}
