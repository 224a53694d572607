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
/// Redis is a meeting point, not a trusted party: everything the agent writes there is
/// sealed with the fleet's secret (``FleetSeal``), and everything it reads is dropped and
/// counted (``FleetRejections``) unless its MAC holds, its time is not ahead of now by more
/// than `leaseTTL`, it is not older than its kind allows or played back, and its content is
/// what its kind holds (a state's document: JSON, within its upstream's `maxResponseBytes`).
/// A lease that fails those checks counts as free. So a Redis client without the secret can
/// delay the fleet at worst (a replica's writes can always be deleted), but never crash a
/// replica, freeze its subscribers, show them a document of its own, or control a stream.
///
/// ```
///  replica A (lease holder)                Redis                      replica B
///  pipeline ─▶ state ─▶ EVAL publish ──▶ latest, PUBLISH states ──▶ follower ─▶ B's subscribers
///  A's streams ◀── apply ◀── PUBLISH replica:A ◀── GET stream:<digest> ◀── POST /streams/{id}/… on B
/// ```
///
/// Metrics: `tributary_cluster_connected` (0 or 1), `tributary_cluster_lease_held{resource}`,
/// `tributary_cluster_rejected_total{reason}`. Loop-confined.
final class ClusterAgent {
    /// How long a forwarded control may take before its answer is 504 `cluster_timeout`.
    static let controlTimeout: Duration = .seconds(2)
    /// How long a stream's location lives in Redis unless renewed (every third of it).
    static let streamKeyLifetime: Duration = .seconds(3600)
    /// How long a resource's latest state stays in Redis after its last update: a first
    /// subscriber shows it at once, even after the fleet was idle a while.
    static let latestLifetime: Duration = .seconds(3600)
    /// How much longer than its document a state may be: its time, MAC and error line.
    static let stateOverheadBytes = 64 * 1024
    /// The longest lease value or stream location read from Redis (a genuine one is ~130 bytes).
    static let maximumValueBytes = 4096

    /// This replica's id: 128 random bits, new at every start.
    let replica = StreamID.random().description
    let keys: ClusterKeys
    let settings: Configuration.Cluster
    private let seal: FleetSeal
    private let rejections: FleetRejections
    private let loop: EventLoop
    private let redis: RedisClient
    private let directory: StreamDirectory
    private let logger: Logger
    private var resources: [String: FleetLiveResource] = [:]
    /// This replica's live streams, by the digest Redis knows them by.
    private var streams: [String: StreamID] = [:]
    /// Control requests sent and not answered yet, by their random tag.
    private var pending: [UInt64: (answer: (Result<Void, HTTPError>) -> Void, deadline: LoopTimer)] = [:]
    private var random = SystemRandomNumberGenerator()
    /// Control requests and reloads acted on lately, against their being played back.
    private var recentRequests = RecentNonces()
    private var recentReloads = RecentNonces()
    /// Resources whose lease script is in flight (one at a time each).
    private var ticking: Set<String> = []
    /// Resources whose last state the lease fenced off: published again once the lease is back.
    private var fenced: Set<String> = []
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
        guard let secret = settings.secret else {
            preconditionFailure("cluster.secret is required with cluster.redis (validated at load)")
        }
        seal = FleetSeal(secret: secret, maximumAhead: settings.leaseTTL)
        rejections = FleetRejections(logger: logger)
        keys = ClusterKeys(prefix: settings.keyPrefix, fleet: seal.fleet)
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
                if let message = event.payload { receivedAddressed(message) }
            },
            redis.subscribe(to: keys.reloads).sink { [unowned self] event in
                if let message = event.payload { receivedReload(message) }
            },
        ]
    }

    var isConnected: Bool { redis.state == .connected }

    /// Makes `local`, the pipeline of `key`, a pipeline of the whole fleet; states from Redis
    /// whose document is larger than `maximumDocumentBytes` (its upstream's
    /// `maxResponseBytes`) are refused.
    func adopt(_ local: LiveResource, key: SharingKey, maximumDocumentBytes: Int) -> FleetLiveResource {
        let fleet = FleetLiveResource(local: local, name: Self.fleetName(of: key), agent: self, maximumDocumentBytes: maximumDocumentBytes)
        if let replaced = resources[fleet.name] { stopSharing(replaced) }
        if leasesHeld[key.resource] == nil {
            let gauge = Gauge(label: "tributary_cluster_lease_held", dimensions: [("resource", key.resource)])
            gauge.record(0)
            leasesHeld[key.resource] = (0, gauge)
        }
        resources[fleet.name] = fleet
        return fleet
    }

    /// What the fleet calls the pipeline of `key` in Redis: the resource's name for its public
    /// document (as before keys existed); for one of parameter values or an identity, the name
    /// and a digest of the whole key, so Redis names no value and no identity, and replicas
    /// agree (identities are keyed from the fleet's secret).
    static func fleetName(of key: SharingKey) -> String {
        guard key != .publicDocument(of: key.resource) else { return key.resource }
        return key.resource + ":" + Digest.sha256Hex(Array(key.canonicalText.utf8)).prefix(32)
    }

    /// Stops sharing every pipeline of resource `name` (a configuration reload removed or
    /// changed it): they stop here and, where this replica leads, their leases go now so a
    /// replica that still serves the resource (another configuration) takes over at once.
    func release(_ name: String) {
        for resource in resources.values where resource.resource == name { stopSharing(resource) }
    }

    /// `fleet`'s key was forgotten (its last stream here left): it stops sharing, unless
    /// another pipeline of the key took its place meanwhile.
    func retire(_ fleet: FleetLiveResource) {
        guard resources[fleet.name] === fleet else { return }
        stopSharing(fleet)
    }

    private func stopSharing(_ resource: FleetLiveResource) {
        let name = resource.name
        if resources[name] === resource { resources[name] = nil }
        if case .leading = resource.role, isConnected {
            redis.send(RedisCommand("EVAL", Self.releaseScript, 1, keys.lease(name), replica)) { _ in }
        }
        fenced.remove(name)
        resource.become(.idle)
    }

    /// Leases held of each resource's pipelines, for `tributary_cluster_lease_held{resource}`.
    private var leasesHeld: [String: (count: Int, gauge: Gauge)] = [:]

    /// A pipeline of `resource` (adopted, so its gauge exists) took or lost its lease.
    func leaseChanged(of resource: String, held: Bool) {
        guard var entry = leasesHeld[resource] else { return }
        entry.count += held ? 1 : -1
        entry.gauge.record(entry.count)
        leasesHeld[resource] = entry
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
    ///
    /// The lease's value is this replica's id, sealed with the time of each renewal. A
    /// holder that another replica's value names is checked here: one whose seal fails, or
    /// that no holder renewed for twice the TTL (a genuine value played back), counts as
    /// free, and the script runs once more to replace exactly that value.
    private func tick(_ resource: FleetLiveResource, replacing invalid: [UInt8]? = nil) {
        let name = resource.name
        guard !ticking.contains(name) else { return }
        ticking.insert(name)
        let ttl = Int(WallClock.milliseconds(settings.leaseTTL))
        let value = seal.seal(Array(replica.utf8), at: WallClock.milliseconds(), for: keys.lease(name))
        let command = RedisCommand(
            "EVAL", Self.leaseScript, 2, keys.lease(name), keys.interest(name), replica, value, ttl,
            resource.subscribers > 0 ? 1 : 0, invalid ?? [])
        redis.send(command) { [unowned self] result in
            ticking.remove(name)
            guard resources[name] === resource else { return }  // released meanwhile
            guard case .success(let reply) = result, let answer = reply.array, let role = answer.first?.text else {
                if !isConnected { runAlone(resource) }
                return
            }
            switch role {
            case "lead":
                let wasFenced = fenced.remove(name) != nil
                if case .leading = resource.role {
                    if wasFenced { resource.republishLatest() }
                    return
                }
                logger.info("cluster: leading", metadata: ["resource": "\(name)"])
                resource.become(.leading)
            case "follow":
                let holder = answer.count > 1 ? answer[1].bytes ?? [] : []
                if let reason = leaseRejection(holder, of: name) {
                    rejections.reject(reason, from: keys.lease(name))
                    // Replaced once per tick: a value rewritten meanwhile waits for the next.
                    if invalid == nil { tick(resource, replacing: holder) }
                    return
                }
                if case .leading = resource.role { logger.info("cluster: lease lost, following", metadata: ["resource": "\(name)"]) }
                fenced.remove(name)
                resource.become(.following)
            default:
                fenced.remove(name)
                resource.become(.idle)
            }
        }
    }

    /// Why the lease value `holder` of resource `name` does not count (nil: it does).
    private func leaseRejection(_ holder: [UInt8], of name: String) -> FleetRejection? {
        let now = WallClock.milliseconds()
        switch seal.open(holder, for: keys.lease(name), now: now) {
        case .failure(let reason):
            return reason
        case .success(let lease):
            guard ClusterMessage.decodeReplica(lease.payload) != nil else { return .malformed }
            let renewedWithin = 2 * WallClock.milliseconds(settings.leaseTTL)
            return lease.time.addingSaturated(renewedWithin) < now ? .stale : nil
        }
    }

    /// Sends a leader's state to the fleet: stored as the latest and published, only while
    /// this replica still holds the lease (a leader that lost it, unknowingly, is fenced off;
    /// one whose lease was overwritten takes it back and publishes the state again).
    func publish(_ name: String, state: LiveState, producedAt: UInt64) {
        let message = seal.seal(ClusterMessage.encode(state), at: producedAt, for: keys.states(name))
        let command = RedisCommand(
            "EVAL", Self.publishScript, 3, keys.lease(name), keys.latest(name), keys.states(name),
            replica, message, Int(WallClock.milliseconds(Self.latestLifetime)))
        redis.send(command) { [unowned self] result in
            if case .success(.integer(1)) = result { return }
            guard isConnected, let resource = resources[name] else { return }
            fenced.insert(name)
            tick(resource)
        }
    }

    /// Follows `name`'s leader: every state it publishes, and the latest at once (again after
    /// every reconnect, as what was published meanwhile is lost), each with when it was
    /// produced. States that fail their checks are dropped and counted. Cancel to stop.
    func follow(_ name: String, maximumDocumentBytes: Int, _ take: @escaping (LiveState, UInt64) -> Void) -> AnyCancellable {
        let channel = keys.states(name)
        let maximumBytes = maximumDocumentBytes + Self.stateOverheadBytes
        let accept = { [unowned self] (message: [UInt8], source: String) in
            let opened = seal.open(message, for: channel, now: WallClock.milliseconds(), maximumBytes: maximumBytes)
            switch opened.flatMap({ opened in
                ClusterMessage.decodeState(opened.payload, maximumDocumentBytes: maximumDocumentBytes).map { ($0, opened.time) }
            }) {
            case .success(let (state, producedAt)): take(state, producedAt)
            case .failure(let reason): rejections.reject(reason, from: source)
            }
        }
        return redis.subscribe(to: channel).sink { [unowned self] event in
            switch event {
            case .subscribed:
                redis.send(RedisCommand("EVAL", Self.boundedGetScript, 1, keys.latest(name), maximumBytes)) { [unowned self] result in
                    switch result {
                    case .success(.string(let bytes)): accept(bytes, keys.latest(name))
                    case .success(.integer): rejections.reject(.tooLarge, from: keys.latest(name))
                    default: break
                    }
                }
            case .message(let bytes):
                accept(bytes, channel)
            }
        }
    }

    // MARK: - Reloads

    /// Reloads `name` for every subscriber of every replica (here only, while Redis is away).
    func reload(_ name: String) {
        guard isConnected else { return reloaded(name) }
        let message = seal.seal(
            ClusterMessage.encodeReload(of: name, nonce: random.next()), at: WallClock.milliseconds(), for: keys.reloads)
        redis.send(RedisCommand("PUBLISH", keys.reloads, message)) { [unowned self] result in
            if case .failure = result { reloaded(name) }
        }
    }

    /// A reload from the reload channel: acted on when genuine, at most `leaseTTL` old and
    /// not seen before.
    private func receivedReload(_ message: [UInt8]) {
        let now = WallClock.milliseconds()
        let window = WallClock.milliseconds(settings.leaseTTL)
        switch seal.open(message, for: keys.reloads, now: now) {
        case .failure(let reason):
            rejections.reject(reason, from: keys.reloads)
        case .success(let opened):
            guard let reload = ClusterMessage.decodeReload(opened.payload) else {
                return rejections.reject(.malformed, from: keys.reloads)
            }
            let expiry = opened.time.addingSaturated(window)
            guard expiry >= now else { return rejections.reject(.stale, from: keys.reloads) }
            guard recentReloads.firstSight(of: reload.nonce, until: expiry, now: now) else {
                return rejections.reject(.replayed, from: keys.reloads)
            }
            reloaded(reload.resource)
        }
    }

    /// A reload reached this replica: a shared pipeline refreshes where it runs, and every
    /// stream of a resource with pipelines of their own reloads on its own worker.
    private func reloaded(_ name: String) {
        // A resource's name reaches every pipeline of it (POST /<name>/reload), a fleet name
        // the one pipeline (a stream's own reload trigger).
        let pipelines = resources.values.filter { $0.name == name || $0.resource == name }
        if !pipelines.isEmpty { return pipelines.forEach { $0.reloadIfRunning() } }
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
        let key = keys.stream(digest: digest)
        let location = seal.seal(Array(replica.utf8), at: WallClock.milliseconds(), for: key)
        redis.send(RedisCommand("SET", key, location, "PX", Int(WallClock.milliseconds(Self.streamKeyLifetime)))) { _ in }
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
            var tag: UInt64 = random.next()
            while pending[tag] != nil { tag = random.next() }
            let deadline = LoopTimer(loop: loop) { [unowned self] in
                complete(tag, .failure(HTTPError(
                    status: 504, code: "cluster_timeout",
                    message: "the replica holding stream \(id) did not answer within \(Self.controlTimeout)")))
            }
            deadline.schedule(after: Self.controlTimeout)
            pending[tag] = (answer, deadline)
            let request = ClusterMessage.ControlRequest(tag: tag, from: replica, stream: digest, control: control)
            let channel = keys.replica(holder)
            let message = seal.seal(ClusterMessage.encode(request), at: WallClock.milliseconds(), for: channel)
            redis.send(RedisCommand("PUBLISH", channel, message)) { [unowned self] result in
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

    /// The replica holding the stream with `digest` (nil: none), from Redis. A location
    /// that fails its seal names no replica.
    private func locate(
        _ digest: String, retrying: Bool, _ found: @escaping (String?) -> Void, unavailable: @escaping () -> Void
    ) {
        let key = keys.stream(digest: digest)
        redis.send(RedisCommand("EVAL", Self.boundedGetScript, 1, key, Self.maximumValueBytes)) { [unowned self] result in
            guard case .success(let reply) = result else { return unavailable() }
            if reply.integer != nil { rejections.reject(.tooLarge, from: key) }
            if let location = reply.bytes {
                switch seal.open(location, for: key, now: WallClock.milliseconds()) {
                case .success(let opened):
                    if let holder = ClusterMessage.decodeReplica(opened.payload) { return found(holder) }
                    rejections.reject(.malformed, from: key)
                case .failure(let reason):
                    rejections.reject(reason, from: key)
                }
            }
            guard retrying else { return found(nil) }
            LoopTimer.fireAndForget(loop: loop, after: Self.relookupDelay) { [weak self] in
                self?.locate(digest, retrying: false, found, unavailable: unavailable)
            }
        }
    }

    /// A message on this replica's own channel: acted on when genuine, a request only when at
    /// most ``controlTimeout`` old (its sender has given up since) and not seen before.
    private func receivedAddressed(_ message: [UInt8]) {
        let channel = keys.replica(replica)
        let now = WallClock.milliseconds()
        switch seal.open(message, for: channel, now: now, maximumBytes: .max) {
        case .failure(let reason):
            rejections.reject(reason, from: channel)
        case .success(let opened):
            guard let addressed = ClusterMessage.decodeAddressed(opened.payload) else {
                return rejections.reject(.malformed, from: channel)
            }
            if case .request(let request) = addressed {
                let expiry = opened.time.addingSaturated(WallClock.milliseconds(Self.controlTimeout))
                guard expiry >= now else { return rejections.reject(.stale, from: channel) }
                guard recentRequests.firstSight(of: request.tag, until: expiry, now: now) else {
                    return rejections.reject(.replayed, from: channel)
                }
            }
            received(addressed)
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
        let channel = keys.replica(request.from)
        let message = seal.seal(ClusterMessage.encode(reply), at: WallClock.milliseconds(), for: channel)
        redis.send(RedisCommand("PUBLISH", channel, message)) { _ in }
    }

    private func complete(_ tag: UInt64, _ outcome: Result<Void, HTTPError>) {
        guard let entry = pending.removeValue(forKey: tag) else { return }
        entry.deadline.cancel()
        entry.answer(outcome)
    }

    static let unavailable = HTTPError(
        status: 503, code: "cluster_unavailable", message: "the stream is not on this replica, and the fleet cannot be reached to find it")

    // MARK: - Scripts (run atomically by Redis)

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
