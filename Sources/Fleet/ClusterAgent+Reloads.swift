import Aggregation
import CoreMetrics
import EventLoop
import HTTPServer
import Logging
import OpenCombine
import Redis


/// Reloads through the fleet: `POST /<name>/reload[?team=core]` on any replica reaches every
/// pipeline of the resource whose parameter values hold those given, on every replica; a
/// stream's own `reload` reaches its key's pipeline.
extension ClusterAgent {
    /// Reloads, for every subscriber of every replica, the pipelines named `name` (a
    /// resource's whose parameter values hold `values`, or one keyed pipeline's fleet name);
    /// here only, while Redis is away.
    func reload(_ name: String, matching values: ParameterValues = .none) {
        let reload = ClusterMessage.Reload(nonce: random.next(), name: name, values: values)
        guard isConnected else { return reloaded(reload) }
        let message = seal.seal(ClusterMessage.encode(reload), at: WallClock.milliseconds(), for: keys.reloads)
        redis.send(RedisCommand("PUBLISH", keys.reloads, message)) { [unowned self] result in
            if case .failure = result { reloaded(reload) }
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
            reloaded(reload)
        }
    }

    /// A reload reached this replica: a shared pipeline it names refreshes where it runs (a
    /// keyed pipeline by its fleet name; a resource's name names each of its pipelines whose
    /// parameter values hold the reload's); a resource with no shared pipelines here has
    /// streams with pipelines of their own, and each that the reload names reloads on its worker.
    func reloaded(_ reload: ClusterMessage.Reload) {
        guard !reload.name.contains(":") else {
            resources[reload.name]?.reloadIfRunning()
            return
        }
        let aim = ReloadAim(resource: reload.name, values: reload.values)
        let shared = resources.values.filter { $0.resource == aim.resource }
        guard shared.isEmpty else {
            for pipeline in shared where aim.aims(at: pipeline.key) { pipeline.reloadIfRunning() }
            return
        }
        _ = directory.reload(aim)
    }
}
