import AccessControl
import Aggregation
import CoreMetrics
import EventLoop
import Fleet
import HTTPServer
import OpenCombine
import TributaryConfiguration

/// The live event streams of one worker: it opens them, knows each resource they carry by its
/// id (the streams registry: a stream's triggers and inputs are reached over HTTP through it),
/// sends their heartbeats from one shared timer, and forgets them, view models and all, when
/// their client goes. Loop-confined.
///
/// A stream of `GET /events` carries several resources, each with an id of its own; to the
/// registry, the directory, the fleet and the limits, each resource it carries counts as one
/// live stream, as if it had a connection of its own.
///
/// A stream opened with a bearer token (``Credential``) belongs to the token's subject: only
/// a token of the same subject controls it (``control(_:_:by:)``), and it ends with `event:
/// error` `token_expired` when the token does (``StreamGrants``).
final class EventStreamHub {
    private let settings: Configuration.EventStreams
    private let directory: StreamDirectory
    /// The fleet, told where this replica's streams are (nil without `cluster.redis`).
    private let cluster: ClusterLink?
    /// This hub as the directory knows it.
    private var listing: StreamDirectory.Listing!
    /// The open connections.
    private var streams: [ObjectIdentifier: EventStream] = [:]
    /// The resources they carry, by id.
    private var feeds: [StreamID: EventFeed] = [:]
    private var heartbeatTimer: LoopTimer!
    private var subscriberGauges: [String: Meter] = [:]
    private let frames = EventFrameCache()
    /// Who owns each stream, when it expires, what it holds of its client's quota.
    private var grants: StreamGrants!
    /// The worker's gate: its stream quota per client (nil: none).
    var gate: AccessGate?

    init(loop: EventLoop, settings: Configuration.EventStreams, directory: StreamDirectory, cluster: ClusterLink? = nil) {
        self.settings = settings
        self.directory = directory
        self.cluster = cluster
        heartbeatTimer = LoopTimer(loop: loop) { [unowned self] in
            for stream in streams.values { stream.heartbeat() }
        }
        heartbeatTimer.scheduleRepeating(every: settings.heartbeat)
        listing = StreamDirectory.Listing(hub: self, loop: loop)
        directory.add(listing)
        grants = StreamGrants(loop: loop)
    }

    deinit {
        directory.remove(listing)
    }

    /// The kernel receive buffer of a stream's socket: its client has nothing more to send.
    static let receiveBuffer = 4096

    /// Answers `request` with an event stream of `resource` (`GET /<name>`), whose view
    /// `views` makes from the request's query for the holder of `credential`, or with the
    /// error it refused the query with (its `updates` parameter included: ``EventUpdates``).
    func open(_ request: ServerRequest, resource: String, views: LiveViewFactory, credential: Credential? = nil) {
        let updates: EventUpdates
        let progressive: Bool
        do throws(HTTPError) {
            updates = try EventUpdates(parameter: request.queryParameters[EventUpdates.parameter])
            progressive = try ProgressiveDocuments.asked(request.queryParameters[ProgressiveDocuments.parameter])
        } catch {
            return request.respond(error)
        }
        open(request, count: 1, framing: .single, updates: updates, progressive: progressive, credential: credential) { opener in
            views.streamed(resource, for: request, given: nil, opener: opener).map { [$0] }
        }
    }

    /// Answers `request` with an event stream carrying the `count` resources `make` gives for
    /// its opener, or with the error it refused them with, opened with `credential` (the
    /// request's verified token, if any): 503 when the worker would have more than
    /// `sse.maxSubscribers` live streams; 429 `too_many_streams` when its client would hold
    /// more than `server.maxStreamsPerClient` (always bounded, rate limit or not). Both are
    /// checked before anything is made, so a refused stream starts no pipeline, not even for
    /// a moment. The gauge `tributary_sse_subscribers{resource}` counts the live streams of
    /// each resource.
    ///
    /// `HEAD` gets the stream's headers and no stream. While the service shuts down, a stream
    /// asked for on a connection still open gets its `retry:` and ends at once, with the
    /// connection: its client reconnects, to another replica or to the restarted service,
    /// instead of holding the shutdown up until its deadline.
    func open(
        _ request: ServerRequest, count: Int, framing: EventStreamFraming, updates: EventUpdates, progressive: Bool = false,
        credential: Credential? = nil, making make: (StreamOpener) -> Result<[StreamedResource], HTTPError>
    ) {
        let client = gate?.clientName(request, credential, by: .identity)
        let opener = StreamOpener(credential: credential, client: client ?? "")
        if request.method == .head || isShuttingDown {
            // Made for their refusals and headers only, and let go at once.
            let resources: [StreamedResource]
            switch make(opener) {
            case .success(let made): resources = made
            case .failure(let error): return request.respond(error)
            }
            let headers = resources.contains(where: \.isPrivate) ? EventStreamFormat.privateHeaders : EventStreamFormat.headers
            request.startStream(status: 200, headers: headers)
            guard request.method != .head else { return }
            request.write(EventStreamFormat.retry(settings.retry))
            return request.endStream()
        }
        guard feeds.count + count <= settings.maxSubscribers else {
            return request.respond(HTTPError(status: 503, code: "too_many_subscribers",
                                             message: "the server is at its limit of \(settings.maxSubscribers) live streams"),
                                   headers: [("Retry-After", "5")])
        }
        var held: StreamGrants.Held?
        if let gate, let client {
            let limit = gate.streamsPerClient
            guard gate.quota.take(count, for: client, limit: limit) else {
                return request.respond(HTTPError(status: 429, code: "too_many_streams",
                                                 message: "this client holds its limit of \(limit) live streams; close one first"))
            }
            held = StreamGrants.Held(quota: gate.quota, client: client, count: count)
        }
        let resources: [StreamedResource]
        switch make(opener) {
        case .success(let made):
            resources = made
        case .failure(let error):
            if let held { held.quota.give(held.count, for: held.client) }
            return request.respond(error)
        }
        let headers = resources.contains(where: \.isPrivate) ? EventStreamFormat.privateHeaders : EventStreamFormat.headers
        let stream = EventStream(
            request: request, resources: resources, framing: framing, updates: updates, progressive: progressive, headers: headers,
            frames: frames
        ) {
            [unowned self] closed in
            streams[ObjectIdentifier(closed)] = nil
            grants.closed(closed)
            for feed in closed.feeds { forget(feed) }
        }
        grants.opened(stream, credential: credential, holding: held)
        streams[ObjectIdentifier(stream)] = stream
        for feed in stream.feeds {
            feeds[feed.id] = feed
            directory.opened(feed.id, of: feed.resource, with: feed.parameters, in: listing)
            cluster?.streamOpened(feed.id)
            gauge(for: feed.resource).increment()
        }
        request.limitSocketSendBuffer(to: settings.sendBuffer)
        request.limitSocketReceiveBuffer(to: Self.receiveBuffer)
        stream.start(retry: settings.retry)
    }

    /// A feed ended: its id no longer reaches a view model, here or through the fleet.
    private func forget(_ feed: EventFeed) {
        feeds[feed.id] = nil
        directory.closed(feed.id)
        cluster?.streamClosed(feed.id)
        gauge(for: feed.resource).decrement()
    }

    /// Ends the live streams of the resources in `endings` (a configuration reload removed or
    /// changed them), each with its `event: error`; see ``EventStream/end(_:)`` for what
    /// happens to a `GET /events` stream that carries other resources too.
    func end(_ endings: [String: ResourceEnding]) {
        guard !endings.isEmpty else { return }
        for stream in Array(streams.values) where stream.feeds.contains(where: { endings[$0.resource] != nil }) {
            for feed in stream.end(endings) { forget(feed) }
        }
    }

    private func gauge(for resource: String) -> Meter {
        if let meter = subscriberGauges[resource] { return meter }
        let meter = Meter(label: "tributary_sse_subscribers", dimensions: [("resource", resource)])
        subscriberGauges[resource] = meter
        return meter
    }

    /// Applies `control` to the view model of stream `id` for the holder of a token of
    /// subject `subject` (its identity's digest; nil: no token) and says how it went, in the
    /// words of an HTTP answer (this worker holds the stream; see ``StreamDirectory``). A
    /// stream opened with a token answers 401 without one, 403 with another subject's.
    func control(_ id: StreamID, _ control: StreamControl, by subject: String? = nil) -> Result<Void, HTTPError> {
        guard let feed = feeds[id] else {
            return .failure(HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(id.redacted)"))
        }
        if let refusal = grants.refusal(of: feed, to: subject) { return .failure(refusal) }
        let view = feed.view
        do {
            try control.apply(to: view)
            return .success(())
        } catch {
            let listed = { (names: [String]) in names.isEmpty ? "none" : names.joined(separator: ", ") }
            switch error {
            case .unknownTrigger(let trigger):
                return .failure(HTTPError(status: 404, code: "unknown_trigger",
                                          message: "stream \(id.redacted) has no trigger \(trigger) (it has: \(listed(view.triggers)))"))
            case .unknownInput(let input):
                return .failure(HTTPError(status: 404, code: "unknown_input",
                                          message: "stream \(id.redacted) has no input \(input) (it has: \(listed(view.inputs)))"))
            case .invalidArgument(let problem):
                return .failure(.badRequest(problem))
            case .notReady(let problem):
                // 409 (RFC 9110 §15.5.10): nothing is wrong with the request, the stream's state
                // is not there yet; the same request may pass in a moment.
                return .failure(HTTPError(status: 409, code: "not_ready", message: problem))
            }
        }
    }

    /// Activates `trigger` on the live streams `ids` of this worker (those still open).
    func activate(_ trigger: String, on ids: [StreamID]) {
        for id in ids {
            try? feeds[id]?.view.activate(trigger, arguments: [:])
        }
    }

    /// Whether the worker is shutting down (see ``finishAll()``).
    private(set) var isShuttingDown = false

    /// Ends every stream, and every stream asked for from now on (shutdown).
    func finishAll() {
        isShuttingDown = true
        for stream in Array(streams.values) { stream.finish() }
    }
}
