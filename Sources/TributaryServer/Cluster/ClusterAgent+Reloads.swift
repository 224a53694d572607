import Aggregation
import CoreMetrics
import EventLoop
import HTTPServer
import Logging
import OpenCombine
import Redis


/// Reloads through the fleet: `POST /<name>/reload` on any replica reaches every pipeline of
/// the resource on every replica (a stream's own `reload`, its key's pipeline).
extension ClusterAgent {
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
    func receivedReload(_ message: [UInt8]) {
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
    func reloaded(_ name: String) {
        // A resource's name reaches every pipeline of it (POST /<name>/reload), a fleet name
        // the one pipeline (a stream's own reload trigger).
        let pipelines = resources.values.filter { $0.name == name || $0.resource == name }
        if !pipelines.isEmpty { return pipelines.forEach { $0.reloadIfRunning() } }
        _ = directory.reload(ReloadAim(resource: name))
    }
}
