package import Aggregation
import CoreMetrics
package import EventLoop
import HTTPServer
package import Logging
import OpenCombine
import Redis
package import TributaryConfiguration

/// One replica's member of the fleet: the process's connection to Redis, on the process's
/// own loop (the service's `ProcessShares.loop`; hiredis on that loop's own libevent). It
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
package final class ClusterAgent {
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
    let seal: FleetSeal
    let rejections: FleetRejections
    let loop: EventLoop
    let redis: RedisClient
    /// This process's streams, which controls forwarded here and reloads reach.
    let directory: any LocalStreams
    let logger: Logger
    var resources: [String: FleetLiveResource] = [:]
    /// This replica's live streams, by the digest Redis knows them by.
    var streams: [String: StreamID] = [:]
    /// Control requests sent and not answered yet, by their random tag.
    var pending: [UInt64: (answer: (Result<Void, HTTPError>) -> Void, deadline: LoopTimer)] = [:]
    var random = SystemRandomNumberGenerator()
    /// Control requests and reloads acted on lately, against their being played back.
    var recentRequests = RecentNonces()
    var recentReloads = RecentNonces()
    /// Resources whose lease script is in flight (one at a time each).
    var ticking: Set<String> = []
    /// Resources whose interest changed while their lease script was in flight.
    var interestChangedWhileTicking: Set<String> = []
    /// Resources whose last state the lease fenced off: published again once the lease is back.
    var fenced: Set<String> = []
    var ticker: LoopTimer!
    var streamRenewal: LoopTimer!
    var subscriptions: [AnyCancellable] = []
    var reportedUnreachable = false
    /// Whether Redis was ever reached: until then the client's `disconnected` is the start,
    /// not a loss to report.
    var hasJoined = false
    let connectedGauge = Gauge(label: "tributary_cluster_connected")
    /// Called on the loop each time the fleet is joined (the process's readiness waits for
    /// the first).
    let joined: () -> Void

    package init(
        settings: Configuration.Cluster, loop: EventLoop, directory: any LocalStreams, logger: Logger, joined: @escaping () -> Void = {}
    ) {
        self.settings = settings
        self.joined = joined
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

    /// Makes `local`, the pipeline of `key` (run by a worker, reached through a bridge to its
    /// loop), a pipeline of the whole fleet; states from Redis whose document is larger than
    /// `maximumDocumentBytes` (its upstream's `maxResponseBytes`) are refused.
    package func adopt(_ local: any LiveSource, key: SharingKey, maximumDocumentBytes: Int) -> FleetLiveResource {
        let fleet = FleetLiveResource(
            local: local, key: key, name: Self.fleetName(of: key), agent: self, maximumDocumentBytes: maximumDocumentBytes)
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
    package func release(_ name: String) {
        for resource in resources.values where resource.resource == name { stopSharing(resource) }
    }

    /// `fleet`'s key was forgotten (its last stream here left): it stops sharing, unless
    /// another pipeline of the key took its place meanwhile.
    func retire(_ fleet: FleetLiveResource) {
        guard resources[fleet.name] === fleet else { return }
        stopSharing(fleet)
    }

    func stopSharing(_ resource: FleetLiveResource) {
        let name = resource.name
        if resources[name] === resource { resources[name] = nil }
        if case .leading = resource.role, isConnected {
            redis.send(RedisCommand("EVAL", Self.releaseScript, 1, keys.lease(name), replica)) { _ in }
        }
        fenced.remove(name)
        resource.become(.idle)
    }

    /// Leases held of each resource's pipelines, for `tributary_cluster_lease_held{resource}`.
    var leasesHeld: [String: (count: Int, gauge: Gauge)] = [:]

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

    func redisChanged(to state: RedisClient.State) {
        connectedGauge.record(state == .connected ? 1 : 0)
        switch state {
        case .connected:
            reportedUnreachable = false
            hasJoined = true
            logger.info("cluster: joined the fleet", metadata: ["redis": "\(settings.redis)", "replica": "\(replica)"])
            registerAllStreams()
            tickAll()
            joined()
        case .disconnected:
            // The client's first state, before any attempt: nothing was lost (a first attempt
            // that fails is reported by redisFailed).
            guard hasJoined else { return }
            logger.warning("cluster: lost Redis, running alone until it is back", metadata: [
                "redis": "\(settings.redis)", "reason": "\(redis.lastFailure?.detail ?? "unknown")",
            ])
            reportedUnreachable = true
            for resource in resources.values { runAlone(resource) }
            for tag in Array(pending.keys) { complete(tag, .failure(Self.unavailable)) }
        }
    }

    /// Redis unreachable from the start says so once (later failures come with a state change).
    func redisFailed(_ error: RedisError) {
        guard !reportedUnreachable, !isConnected else { return }
        reportedUnreachable = true
        logger.warning("cluster: cannot reach Redis, running alone until it answers", metadata: [
            "redis": "\(settings.redis)", "reason": "\(error.detail)",
        ])
    }

    func runAlone(_ resource: FleetLiveResource) {
        resource.become(resource.subscribers > 0 ? .standalone : .idle)
    }
}
