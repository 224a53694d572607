import Aggregation
import CoreMetrics
import EventLoop
import HTTPCore
import HTTPServer
import Logging
import OpenCombine
import Redis


/// The fleet's shared live pipelines: each tick decides, from a pipeline's lease in Redis,
/// whether this replica leads it (runs it and publishes its states), follows the leader, or
/// rests; leaders publish, followers take what is newer than what they show.
extension ClusterAgent {
    /// A resource's subscribers came or all went: decide its role now, not at the next tick.
    /// When its lease script is in flight already (sent with the interest of before), it is
    /// run again as soon as that one is answered.
    func interestChanged(in name: String) {
        guard let resource = resources[name] else { return }
        guard isConnected else { return runAlone(resource) }
        if ticking.contains(name) { interestChangedWhileTicking.insert(name) }
        tick(resource)
    }

    func tickAll() {
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
    func tick(_ resource: FleetLiveResource, replacing invalid: [UInt8]? = nil) {
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
            // Decided on the interest of before: the role the interest of now gives comes next.
            let interestChanged = interestChangedWhileTicking.remove(name) != nil
            defer { if interestChanged { self.interestChanged(in: name) } }
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
    func leaseRejection(_ holder: [UInt8], of name: String) -> FleetRejection? {
        let now = WallClock.milliseconds()
        switch seal.open(holder, for: keys.lease(name), now: now) {
        case .failure(let reason):
            return reason
        case .success(let lease):
            guard ClusterMessage.decodeReplica(lease.payload) != nil else { return .malformed }
            let renewedWithin = WallClock.milliseconds(settings.leaseTTL).multipliedSaturated(by: 2)
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
}
