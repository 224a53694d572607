import Aggregation
import CoreMetrics
import EventLoop
import HTTPServer
import Logging
import OpenCombine
import Redis


/// Where each of this replica's streams lives, in Redis under the digest of its id, and the
/// control of streams across replicas: a trigger or input that reaches a replica not holding
/// its stream is sent to the one that does, which answers back.
extension ClusterAgent {
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

    func register(_ digest: String) {
        let key = keys.stream(digest: digest)
        let location = seal.seal(Array(replica.utf8), at: WallClock.milliseconds(), for: key)
        redis.send(RedisCommand("SET", key, location, "PX", Int(WallClock.milliseconds(Self.streamKeyLifetime)))) { _ in }
    }

    func registerAllStreams() {
        guard isConnected else { return }
        for digest in streams.keys { register(digest) }
    }

    /// Applies `control` to stream `id`, held by another replica, for the holder of a token of
    /// `subject` (its identity digest; nil: no token): finds which replica in Redis, sends it
    /// there (the holder checks the subject against the stream's owner), and hands the
    /// holder's answer to `answer` (on this loop).
    ///
    /// A stream Redis does not know is looked up once more after ``relookupDelay``: a Redis
    /// that restarted empty learns where the streams are from every replica as it rejoins, a
    /// moment after it answers again.
    func forward(_ control: StreamControl, to id: StreamID, by subject: String? = nil, _ answer: @escaping (Result<Void, HTTPError>) -> Void) {
        guard isConnected else { return answer(.failure(Self.unavailable)) }
        let digest = ClusterKeys.streamDigest(id)
        let unknown = HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(id.redacted)")
        locate(digest, retrying: true) { [unowned self] holder in
            guard let holder else { return answer(.failure(unknown)) }
            guard holder != replica else { return answer(.failure(unknown)) }
            var tag: UInt64 = random.next()
            while pending[tag] != nil { tag = random.next() }
            let deadline = LoopTimer(loop: loop) { [unowned self] in
                complete(tag, .failure(HTTPError(
                    status: 504, code: "cluster_timeout",
                    message: "the replica holding stream \(id.redacted) did not answer within \(Self.controlTimeout)")))
            }
            deadline.schedule(after: Self.controlTimeout)
            pending[tag] = (answer, deadline)
            let request = ClusterMessage.ControlRequest(tag: tag, from: replica, stream: digest, control: control, subject: subject)
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
    func locate(
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
    func receivedAddressed(_ message: [UInt8]) {
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

    func received(_ message: ClusterMessage.Addressed) {
        switch message {
        case .reply(let reply):
            complete(reply.tag, reply.outcome)
        case .request(let request):
            let agent = LoopBound(self, loop: loop)
            let answer = { @Sendable (outcome: Result<Void, HTTPError>) in agent.value.reply(to: request, outcome) }
            guard let id = streams[request.stream], directory.apply(request.control, to: id, by: request.subject, answeringOn: loop, answer) else {
                return reply(to: request, .failure(HTTPError(status: 404, code: "unknown_stream", message: "no live stream here")))
            }
        }
    }

    func reply(to request: ClusterMessage.ControlRequest, _ outcome: Result<Void, HTTPError>) {
        let reply = ClusterMessage.ControlReply(tag: request.tag, outcome: outcome)
        let channel = keys.replica(request.from)
        let message = seal.seal(ClusterMessage.encode(reply), at: WallClock.milliseconds(), for: channel)
        redis.send(RedisCommand("PUBLISH", channel, message)) { _ in }
    }

    func complete(_ tag: UInt64, _ outcome: Result<Void, HTTPError>) {
        guard let entry = pending.removeValue(forKey: tag) else { return }
        entry.deadline.cancel()
        entry.answer(outcome)
    }

    static let unavailable = HTTPError(
        status: 503, code: "cluster_unavailable", message: "the stream is not on this replica, and the fleet cannot be reached to find it")
}
