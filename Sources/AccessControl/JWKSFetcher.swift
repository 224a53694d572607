package import EventLoop
package import Logging
package import UpstreamClient

/// Keeps the process's ``TokenKeys`` up to date with a JSON Web Key Set (`auth.jwt.jwks`):
/// fetched at start, every `jwksRefresh`, and when a token names a `kid` the set does not
/// have (an issuer rotating its keys), at most once every ``refetchInterval``, so a client
/// sending made-up `kid`s cannot make the service hammer the issuer. Fetched with the
/// service's own ``UpstreamClient``, on the process's own loop. A failed fetch keeps the keys
/// known (and is logged); it never empties the set. Loop-confined.
package final class JWKSFetcher {
    static let refetchInterval: Duration = .seconds(10)
    static let timeout: Duration = .seconds(5)
    static let maxBytes = 1024 * 1024

    private let url: BaseURL
    private let keys: TokenKeys
    private let client: UpstreamClient
    private let logger: Logger
    private let loop: EventLoop
    private var refresh: LoopTimer!
    private var inFlight: UpstreamCall?
    /// A fetch is under way: its call, or making the verifiers of what it fetched.
    private var isFetching = false
    /// What waits for the fetch in flight (tokens with an unknown `kid`).
    private var waiting: [@Sendable () -> Void] = []
    /// When a token's unknown `kid` last made a fetch (the periodic ones do not count).
    private var lastRefetch: ContinuousClock.Instant?

    package init(url: BaseURL, every interval: Duration, keys: TokenKeys, loop: EventLoop, logger: Logger) {
        self.url = url
        self.keys = keys
        self.loop = loop
        self.logger = logger
        client = UpstreamClient(loop: loop, configuration: .init(defaultPoolCapacity: 1, maxResponseBytes: Self.maxBytes))
        refresh = LoopTimer(loop: loop) { [unowned self] in fetch() }
        refresh.scheduleRepeating(every: interval)
        fetch()
    }

    deinit {
        refresh.cancel()
        inFlight?.cancel()
    }

    /// A token names `kid`, which no key has: fetch again unless an unknown `kid` made one
    /// within ``refetchInterval``; `done` runs once the fetch ended (at once when none is made).
    package func refetch(for kid: String, _ done: @escaping @Sendable () -> Void) {
        if isFetching { return waiting.append(done) }
        if let lastRefetch, ContinuousClock.now - lastRefetch < Self.refetchInterval { return done() }
        lastRefetch = .now
        waiting.append(done)
        fetch()
    }

    private func fetch() {
        guard !isFetching else { return }
        isFetching = true
        let request = UpstreamRequest(
            base: url, path: url.path.isEmpty ? "/" : "", headers: [("Accept", "application/json")], timeout: Self.timeout,
            maxResponseBytes: Self.maxBytes)
        inFlight = client.execute(request) { [weak self] result in self?.fetched(result) }
    }

    private func fetched(_ result: Result<UpstreamResponse, UpstreamError>) {
        inFlight = nil
        let keys = self.keys
        let logger = self.logger
        let url = self.url
        guard case .success(let response) = result, response.status == 200 else {
            let reason = switch result {
            case .success(let response): "status \(response.status)"
            case .failure(let error): error.description
            }
            logger.warning("auth: fetching the JWKS failed; the keys known stay", metadata: ["url": "\(url)", "reason": "\(reason)"])
            keys.setFetched(nil)
            return finished()
        }
        let body = response.body
        let fetcher = LoopBound(self, loop: loop)
        let loop = self.loop
        // jwt-kit makes its verifiers on a task (its key collection is an actor).
        Task {
            do {
                let made = try await TokenKeys.make(jwks: body)
                keys.setFetched(made, from: Array(body))
                logger.debug("auth: JWKS fetched", metadata: ["keys": "\(made.count)"])
            } catch {
                logger.warning("auth: the JWKS is not a key set; the keys known stay", metadata: ["url": "\(url)"])
                keys.setFetched(nil)
            }
            loop.execute { fetcher.value.finished() }
        }
    }

    /// The fetch ended and the keys are updated: what waited for it goes on.
    private func finished() {
        isFetching = false
        let waiters = waiting
        waiting = []
        for waiter in waiters { waiter() }
    }
}
