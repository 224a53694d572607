package import Aggregation
import CoreMetrics
package import EventLoop
package import HTTPServer
package import TributaryConfiguration

/// What a route asks of a request before it serves it (``AccessGate``): whether a token is
/// required and with which scopes, and the rate limits it counts against.
package struct AccessPolicy {
    /// The label of `tributary_rate_limited_total{resource}`: the resource, `events`, or
    /// `streams` (stream control).
    let label: String
    package let authRequired: Bool
    let scopes: [String]
    /// Each limit once, by its policy's name.
    let limits: [Limit]

    struct Limit {
        let name: String
        let gcra: GCRA
        let by: Configuration.ClientKeyKind
    }

    /// The policy of resource `name` in `configuration`.
    package init(resource name: String, _ configuration: Configuration) {
        self.init(label: name, accesses: [configuration.access(of: name)])
    }

    /// The policy of a request for several resources (`GET /events`): a token if any needs
    /// one, every scope any needs, every limit any counts against.
    package init(label: String, accesses: [Configuration.ResourceAccess]) {
        self.label = label
        authRequired = accesses.contains { $0.authRequired }
        var scopes: [String] = []
        var limits: [Limit] = []
        for access in accesses {
            for scope in access.scopes where !scopes.contains(scope) { scopes.append(scope) }
            if let limit = access.rateLimit, !limits.contains(where: { $0.name == access.policyName }) {
                limits.append(Limit(name: access.policyName, gcra: GCRA(limit), by: limit.by))
            }
        }
        self.scopes = scopes
        self.limits = limits
    }

    /// Stream control: no token required (the stream's owner decides), the server's limit.
    package static func streamControl(_ configuration: Configuration) -> AccessPolicy {
        let limit = configuration.server.rateLimit.map { Configuration.ResourceAccess(authRequired: false, scopes: [], rateLimit: $0, policyName: "default") }
        return AccessPolicy(label: "streams", accesses: limit.map { [$0] } ?? [])
    }
}

/// One worker's door to its routes: reads a request's bearer token (``BearerToken``) and
/// verifies it (``TokenVerifier``), counts the request against its rate limits (alone:
/// ``LocalRateLimiter``; in a fleet: ``FleetRateLimiter``), then checks what the route
/// requires. In that order, so that a flood of bad tokens is limited too, and so that every
/// answer of a limited route, a 401 as much as a 200, carries `RateLimit-Policy` and
/// `RateLimit`. A refused request gets its answer here: 401/403 (``AuthFailure``) or 429
/// `rate_limited` with `Retry-After`; an admitted one goes on, at once when nothing needed
/// waiting (no key to fetch, no Redis to ask), else later on the worker's loop.
/// Loop-confined.
///
/// ```swift
/// gate.admit(request, policy) { credential in serve(request, as: credential) }
/// ```
package final class AccessGate {
    let loop: EventLoop
    /// Nil without `auth.jwt`: no token is read.
    let verifier: TokenVerifier?
    private let local: LocalRateLimiter
    /// The fleet's limits (nil: alone, or no limit decided yet): made at start when a
    /// limit is configured, else when one is first decided (a reload may add one).
    private var fleetLimiter: FleetRateLimiter?
    private let makeFleet: () -> FleetRateLimiter?
    package let quota: StreamQuota
    /// `server.trustedProxies` and `server.maxStreamsPerClient`, as the last reload said.
    package var trustedProxies: [AddressRange]
    package var streamsPerClient: Int
    private var counters: [String: Counter] = [:]

    /// Names a client in Redis: a keyed hash, the same on every replica (its key derives from
    /// the fleet's secret), from which no address or subject can be read back.
    private let hasher: IdentityHasher

    package init(
        loop: EventLoop, verifier: TokenVerifier?, local: LocalRateLimiter, quota: StreamQuota, hasher: IdentityHasher,
        configuration: Configuration
    ) {
        self.loop = loop
        self.hasher = hasher
        self.verifier = verifier
        self.local = local
        let cluster = configuration.cluster
        makeFleet = {
            cluster.map { FleetRateLimiter(redis: $0.redis, keyPrefix: $0.keyPrefix, loop: loop, local: local) }
        }
        self.quota = quota
        trustedProxies = configuration.server.trustedProxies
        streamsPerClient = configuration.streamsPerClient
        if configuration.isRateLimited { fleetLimiter = makeFleet() }
    }

    private var fleet: FleetRateLimiter? {
        if fleetLimiter == nil { fleetLimiter = makeFleet() }
        return fleetLimiter
    }

    /// Whether limits are decided through the fleet's Redis now.
    var isFleetConnected: Bool { fleetLimiter?.isConnected ?? false }

    /// Whether a request under `policy` is served as it comes: no token to read, no limit.
    package func isOpen(_ policy: AccessPolicy) -> Bool {
        verifier == nil && policy.limits.isEmpty && !policy.authRequired
    }

    /// Lets `request` through to `serve` if `policy` admits it, or answers it.
    package func admit(_ request: ServerRequest, _ policy: AccessPolicy, then serve: @escaping (Credential?) -> Void) {
        guard let verifier, let token = BearerToken.of(request) else {
            return limit(request, policy, credential: nil) { [self] in authorize(request, policy, nil, serve) }
        }
        verifier.verify(token, on: loop) { [self] outcome in
            switch outcome {
            case .success(let credential):
                limit(request, policy, credential: credential) { [self] in authorize(request, policy, credential, serve) }
            case .failure(let failure):
                limit(request, policy, credential: nil) { failure.answer(request) }
            }
        }
    }

    /// The token's checks against the route's needs, then `serve` (if the client is still there).
    private func authorize(_ request: ServerRequest, _ policy: AccessPolicy, _ credential: Credential?, _ serve: (Credential?) -> Void) {
        if policy.authRequired {
            guard verifier != nil, let credential else { return AuthFailure.missing.answer(request) }
            guard credential.grants(policy.scopes) else { return AuthFailure.insufficientScope(needed: policy.scopes).answer(request) }
        }
        guard request.isOpen else { return }
        serve(credential)
    }

    // MARK: - Rate limits

    /// Counts the request against each of `policy`'s limits in turn; `next` when all admit
    /// it, else answers 429. Either way the answer will carry each limit's fields.
    private func limit(_ request: ServerRequest, _ policy: AccessPolicy, credential: Credential?, _ next: @escaping () -> Void) {
        guard !policy.limits.isEmpty else { return next() }
        decide(request, policy, credential, index: 0, policies: [], states: [], next)
    }

    private func decide(
        _ request: ServerRequest, _ policy: AccessPolicy, _ credential: Credential?, index: Int, policies: [String], states: [String],
        _ next: @escaping () -> Void
    ) {
        guard index < policy.limits.count else {
            request.responseHeaders.append(("RateLimit-Policy", policies.joined(separator: ", ")))
            request.responseHeaders.append(("RateLimit", states.joined(separator: ", ")))
            return next()
        }
        let limit = policy.limits[index]
        let client = clientName(request, credential, by: limit.by)
        let decided = { [self] (decision: RateDecision) in
            let policies = policies + [RateLimitFields.policy(limit.name, limit.gcra)]
            let states = states + [RateLimitFields.state(limit.name, decision)]
            guard decision.admitted else {
                request.responseHeaders.append(("RateLimit-Policy", policies.joined(separator: ", ")))
                request.responseHeaders.append(("RateLimit", states.joined(separator: ", ")))
                counter(policy.label).increment()
                return request.respond(
                    HTTPError(status: 429, code: "rate_limited",
                              message: "too many requests under the rate limit \(limit.name): try again in \(decision.retryAfterSeconds) s"),
                    headers: [("Retry-After", String(decision.retryAfterSeconds))])
            }
            decide(request, policy, credential, index: index + 1, policies: policies, states: states, next)
        }
        guard let fleet else { return decided(local.decide(client, policy: limit.name, limit.gcra)) }
        fleet.decide(hasher.identity(subject: client, headers: []).digest, local: client, policy: limit.name, limit.gcra, decided)
    }

    /// The client as a limit or a quota counts it: its token's subject (by identity, when it
    /// has a token), else its address in canonical form, IPv6 per /64 (``ClientAddress``).
    package func clientName(_ request: ServerRequest, _ credential: Credential?, by kind: Configuration.ClientKeyKind) -> String {
        if kind == .identity, let credential { return "sub:" + credential.subjectIdentity.digest }
        return "ip:" + ClientAddress.of(request, trusting: trustedProxies)
    }

    private func counter(_ label: String) -> Counter {
        if let counter = counters[label] { return counter }
        let counter = Counter(label: "tributary_rate_limited_total", dimensions: [("resource", label)])
        counters[label] = counter
        return counter
    }
}
