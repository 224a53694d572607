import CLibevent
public import Telemetry
public import EventLoop

/// An HTTP/1.1 client for upstream APIs on libevent: a keep-alive connection pool per origin,
/// a deadline per call, a response-size limit, HTTPS with certificate and host name
/// verification and SNI. Plain HTTP goes over sockets of its own (``SocketConnection``), HTTPS
/// through evhttp's client (``EvhttpConnection``). Loop-confined: calls start and complete on
/// its loop.
///
/// ```swift
/// let client = UpstreamClient(loop: loop)
/// let call = client.execute(UpstreamRequest(base: tasks, path: "/groups")) { result in ... }
/// call.cancel()   // the upstream sees its connection close
/// ```
///
/// Or as a publisher, whose cancellation cancels the call: ``publisher(for:)``.
public final class UpstreamClient {
    public struct Configuration: Sendable {
        /// Connections per origin unless ``setPoolLimits(capacity:maxQueue:for:)`` says otherwise.
        public var defaultPoolCapacity: Int
        /// Calls that may wait for a connection per origin, unless set per origin; beyond,
        /// a call fails at once with ``UpstreamError/Kind/saturated``.
        public var defaultMaxQueue: Int
        /// Larger response bodies fail the call with ``UpstreamError/Kind/responseTooLarge``.
        public var maxResponseBytes: Int
        public var maxResponseHeaderBytes: Int
        /// Socket inactivity limit on a connection (connect, write, read); a call's own
        /// deadline is ``UpstreamRequest/timeout``.
        public var connectionTimeout: Duration
        /// Trust for HTTPS origins (nil: the system's CA certificates).
        public var tls: TLSContext?
        /// Budgets shared with the other loops' clients (nil: each pool is on its own): the
        /// pools of an origin then hold at most its capacity together, and lend it to each
        /// other (see ``ConnectionBudgets``).
        public var connectionBudgets: ConnectionBudgets?
        /// Where each call with a ``UpstreamRequest/trace`` records its CLIENT span (nil:
        /// tracing is off, and a call's `traceparent` names a new span id of its own).
        public var spans: Spans?

        public init(
            defaultPoolCapacity: Int = 64, defaultMaxQueue: Int = 10_000, maxResponseBytes: Int = 8 * 1024 * 1024,
            maxResponseHeaderBytes: Int = 64 * 1024, connectionTimeout: Duration = .seconds(30), tls: TLSContext? = nil,
            connectionBudgets: ConnectionBudgets? = nil, spans: Spans? = nil
        ) {
            self.defaultPoolCapacity = defaultPoolCapacity
            self.defaultMaxQueue = defaultMaxQueue
            self.maxResponseBytes = maxResponseBytes
            self.maxResponseHeaderBytes = maxResponseHeaderBytes
            self.connectionTimeout = connectionTimeout
            self.tls = tls
            self.connectionBudgets = connectionBudgets
            self.spans = spans
        }
    }

    public let loop: EventLoop
    public let configuration: Configuration
    private var pools: [BaseURL.Origin: ConnectionPool] = [:]
    /// Pools of origins no longer configured that still carry calls (``retirePools(keeping:)``):
    /// each is let go once its last call has ended.
    private var retiring: [ConnectionPool] = []
    /// The pool the last call went to (one of `pools`).
    private var lastPool: ConnectionPool?
    private var limits: [BaseURL.Origin: (capacity: Int, maxQueue: Int)] = [:]
    private lazy var systemTLS: TLSContext? = try? TLSContext.client()
    /// An asynchronous DNS resolver, made on first use of a host name.
    private lazy var resolver: AddressResolver? = try? AddressResolver(loop: loop)
    /// Every call's deadline, one timer per distinct timeout.
    let deadlines: CallDeadlines
    /// What this loop's plain-HTTP connections receive into.
    private let receiveBuffer = SocketConnection.ReceiveBuffer()

    public init(loop: EventLoop, configuration: Configuration = Configuration()) {
        self.loop = loop
        self.configuration = configuration
        deadlines = CallDeadlines(loop: loop)
    }

    deinit {
        // Calls in flight hold their connections; cancel them so everything is freed, then
        // free the connections before the resolver they may refer to.
        for pool in Array(pools.values) + retiring {
            pool.cancelAll()
            pool.retire()
        }
        lastPool = nil
        pools.removeAll()
        retiring.removeAll()
    }

    /// Sets how many connections the pool for `base`'s origin may open (with
    /// ``Configuration/connectionBudgets``: all the clients' pools for it together), and how
    /// many calls may wait for one here (nil: ``Configuration/defaultMaxQueue``). A pool
    /// already in use takes them up in place (see ``ConnectionPool/setLimits(capacity:maxQueue:)``).
    public func setPoolLimits(capacity: Int, maxQueue: Int? = nil, for base: BaseURL) {
        let limit = (capacity: capacity, maxQueue: maxQueue ?? configuration.defaultMaxQueue)
        limits[base.origin] = limit
        pools[base.origin]?.setLimits(capacity: limit.capacity, maxQueue: limit.maxQueue)
    }

    /// Lets go of the pools of every origin but `origins` (a configuration reload removed the
    /// upstreams that called them), so a process reloaded many times holds no connections, and
    /// no pools, for origins it no longer calls. Idle connections close now; those in use
    /// close as their calls end, and each pool is freed once it carries no call. A later call
    /// to such an origin gets a new pool, with the default limits unless set again.
    public func retirePools(keeping origins: Set<BaseURL.Origin>) {
        for (origin, pool) in pools where !origins.contains(origin) {
            pools[origin] = nil
            limits[origin] = nil
            if lastPool === pool { lastPool = nil }
            pool.startRetiring()
            if pool.hasCalls { retiring.append(pool) } else { pool.retire() }
        }
    }

    /// A retiring pool has no call left: it is let go on a later loop turn, when the call that
    /// ended no longer reaches it, unless a call came back to it meanwhile (a call that lost
    /// its reused connection goes again in its pool).
    func retiredPoolIsIdle(_ pool: ConnectionPool) {
        loop.deferred { [weak self] in
            guard let self, !pool.hasCalls, let index = retiring.firstIndex(where: { $0 === pool }) else { return }
            retiring.remove(at: index)
            pool.retire()
        }
    }

    /// Pools held now, retiring ones included.
    var poolCount: Int { pools.count + retiring.count }

    /// Starts a call; `completion` runs once on the loop unless the call is cancelled.
    /// `consuming`: a caller that hands over its last copy of the request saves the call a
    /// copy of it (a retain and a release of each of its strings and arrays).
    @discardableResult
    public func execute(
        _ request: consuming UpstreamRequest, completion: @escaping (Result<UpstreamResponse, UpstreamError>) -> Void
    ) -> UpstreamCall {
        let pool = pool(for: request)
        return start(UpstreamCall(request: request, pool: pool, receiver: .closure(completion)))
    }

    /// Starts a call whose result `completion` hands to `receiver` (as above; the call holds
    /// `receiver` until then). For a caller that is an object already: a `completion` that
    /// captures nothing costs no allocation per call, where one that captures the caller does.
    ///
    /// ```swift
    /// client.execute(request, for: self) { fetch, result in unsafeDowncast(fetch, to: Fetch.self).ended(result) }
    /// ```
    @discardableResult
    public func execute(
        _ request: consuming UpstreamRequest, for receiver: AnyObject,
        completion: @escaping (AnyObject, Result<UpstreamResponse, UpstreamError>) -> Void
    ) -> UpstreamCall {
        let pool = pool(for: request)
        return start(UpstreamCall(request: request, pool: pool, receiver: .object(receiver, completion)))
    }

    private func start(_ call: UpstreamCall) -> UpstreamCall {
        if let spans = configuration.spans { call.recordSpan(in: spans) }
        call.start(deadlines: deadlines)
        return call
    }

    /// Open connections to `base`'s origin, idle ones included.
    public func connectionCount(for base: BaseURL) -> Int {
        pools[base.origin]?.connectionCount ?? 0
    }

    /// Calls waiting for a connection to `base`'s origin.
    public func waitingCount(for base: BaseURL) -> Int {
        pools[base.origin]?.waitingCount ?? 0
    }

    /// Slots of the line for `base`'s origin (waiting calls and withdrawn ones not yet
    /// compacted): what the line costs in memory.
    func lineSlots(for base: BaseURL) -> Int {
        pools[base.origin]?.slotCount ?? 0
    }

    /// The pool for `request`'s origin. The request is borrowed, its origin compared where it
    /// lies: a copy of the origin cost a retain and a release of each of its two strings.
    private func pool(for request: borrowing UpstreamRequest) -> ConnectionPool {
        // Calls come in runs to one origin (a list's detail calls): the last pool answers
        // them without hashing the origin's host name.
        if let lastPool, lastPool.origin == request.base.origin { return lastPool }
        let pool = lookUpPool(for: request.base.origin)
        lastPool = pool
        return pool
    }

    private func lookUpPool(for origin: BaseURL.Origin) -> ConnectionPool {
        if let pool = pools[origin] { return pool }
        let limit = limits[origin] ?? (configuration.defaultPoolCapacity, configuration.defaultMaxQueue)
        let pool = ConnectionPool(
            origin: origin, capacity: limit.capacity, maxQueue: limit.maxQueue,
            budget: configuration.connectionBudgets?.budget(for: origin), client: self)
        pools[origin] = pool
        return pool
    }

    /// A connection over a socket to `origin` that another loop's pool lent this one.
    func adoptConnection(_ lent: LentSocket, to origin: BaseURL.Origin) -> any UpstreamConnection {
        SocketConnection(adopting: lent, loop: loop, origin: origin, resolver: nil, receiveBuffer: receiveBuffer, limits: configuration)
    }

    func makeConnection(to origin: BaseURL.Origin) -> (any UpstreamConnection)? {
        let resolver = origin.host.isIPAddressLiteral ? nil : self.resolver
        guard origin.isTLS else {
            return SocketConnection(loop: loop, origin: origin, resolver: resolver, receiveBuffer: receiveBuffer, limits: configuration)
        }
        guard let tls = configuration.tls ?? systemTLS else { return nil }
        return EvhttpConnection(loop: loop, origin: origin, resolver: resolver, tls: tls, limits: configuration)
    }
}
