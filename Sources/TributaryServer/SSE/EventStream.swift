import Aggregation
import HTTPServer

/// One client's server-sent event stream: a connection carrying one live resource
/// (`GET /groups`) or several (`GET /events`), each followed by an ``EventFeed`` of its own.
/// The feeds decide what to send; the stream writes it in its ``EventStreamFraming``, tells
/// the feeds when the socket drained (back pressure), sends heartbeats, and cancels every
/// feed when its client goes. Loop-confined.
///
/// What the client of one resource sees:
/// ```
/// retry: 2000
/// event: stream      data: {"id":"<32 hex>","triggers":["reload"],"inputs":[]}   (the view's names)
/// event: snapshot    id: <version>   data: <document>      (only when the document changed)
/// event: error       data: {"error":{"code","message"}}     (a refresh failed; the stream stays)
/// : heartbeat                                               (every sse.heartbeat)
/// ```
///
/// and the client of `GET /events?resource=groups&resource=rows`:
/// ```
/// retry: 2000
/// event: stream      data: {"id":"<32 hex>","resource":"groups","triggers":["reload"],"inputs":[]}
/// event: stream      data: {"id":"<32 hex>","resource":"rows","triggers":["reload","loadMore"],"inputs":[]}
/// event: snapshot    id: groups:<version>,rows:<version>   data: {"resource":"rows","data":<document>}
/// event: error       data: {"resource":"groups","error":{"code","message"}}
/// : heartbeat
/// ```
///
/// With `?updates=patch`, each document after the first goes as an RFC 6902 patch from the
/// one the client has, when that is smaller (``EventFrameCache``):
/// ```
/// event: patch       id: <version>   data: [{"op":"replace","path":"/7/taskCount","value":13}]
/// event: patch       id: groups:<version>,rows:<version>   data: {"resource":"groups","patch":[…]}   (GET /events)
/// ```
///
/// A `Last-Event-ID` naming a resource's current version skips resending that document (and
/// with patches, the next change is a patch from it).
final class EventStream: StreamFollower {
    let request: ServerRequest
    let framing: EventStreamFraming
    /// Whether new documents go whole or as patches (`updates`).
    let updates: EventUpdates
    /// Whether a pipeline's first document shows as it arrives (`progressive=true`).
    let progressive: Bool
    /// One per resource, in the order the client asked for them.
    private(set) var feeds: [EventFeed] = []
    private let frames: EventFrameCache
    /// The stream's response headers (``EventStreamFormat/headers``, or the private ones).
    private let headers: [(String, String)]
    private let onClose: (EventStream) -> Void
    private var isClosed = false

    /// A stream of `resources` on `request`; each gets a fresh id.
    init(
        request: ServerRequest, resources: [StreamedResource], framing: EventStreamFraming, updates: EventUpdates,
        progressive: Bool = false, headers: [(String, String)] = EventStreamFormat.headers, frames: EventFrameCache,
        onClose: @escaping (EventStream) -> Void
    ) {
        self.request = request
        self.framing = framing
        self.updates = updates
        self.progressive = progressive
        self.headers = headers
        self.frames = frames
        self.onClose = onClose
        let clientHas = framing.versionsTheClientHas(lastEventID: request.header("Last-Event-ID"), resources: resources.map(\.name))
        feeds = resources.map { resource in
            EventFeed(id: .random(), resource: resource, clientHas: clientHas[resource.name], stream: self)
        }
    }

    /// Sends the headers and the preamble (`retry:` and one `stream` event per resource),
    /// then follows every resource's states.
    func start(retry: Duration) {
        request.startStream(status: 200, headers: headers)
        var preamble = EventStreamFormat.retry(retry)
        for feed in feeds { preamble += EventStreamFormat.event("stream", data: framing.announcement(of: feed)) }
        request.write(preamble)
        request.follower = self
        // What tells a client that only half-closed (it takes a comment) from one that is gone.
        request.livenessProbe = EventStreamFormat.heartbeat
        for feed in feeds where !isClosed { feed.start() }
    }

    /// The socket took what waited: each feed may send what it held back.
    func streamDrained() {
        for feed in feeds { feed.drained() }
    }

    /// The client went away.
    func streamDisconnected() {
        close()
    }

    /// Writes a heartbeat comment unless output is still waiting (a stuck client gets no more).
    func heartbeat() {
        guard request.pendingOutputBytes == 0 else { return }
        request.write(EventStreamFormat.heartbeat)
    }

    /// Ends the stream from the server side (shutdown, or a resource's states ended).
    func finish() {
        guard !isClosed else { return }
        request.endStream()
        close()
    }

    /// Ends the feeds of the resources in `endings` (a configuration reload removed or
    /// changed them), each with an `event: error` saying why; returns those that ended while
    /// the stream goes on. A stream of one resource ends with it. On `GET /events`, a removed
    /// resource's feed ends and the others go on (a page's other views keep their data); a
    /// changed one ends the whole stream after its error, so the client's reconnect (with its
    /// `Last-Event-ID`, which skips documents it has) follows the new definition.
    func end(_ endings: [String: ResourceEnding]) -> [EventFeed] {
        let ending = feeds.filter { endings[$0.resource] != nil }
        guard !isClosed, !ending.isEmpty else { return [] }
        var events: [UInt8] = []
        for feed in ending {
            let error = endings[feed.resource]!.error(of: feed.resource)
            events += EventStreamFormat.event("error", data: framing.errorData(error, of: feed.resource, answering: [:]))
        }
        request.write(events)
        if framing == .single || ending.count == feeds.count || ending.contains(where: { endings[$0.resource] == .changed }) {
            finish()
            return []
        }
        for feed in ending { feed.cancel() }
        feeds.removeAll { feed in ending.contains { $0 === feed } }
        return ending
    }

    // MARK: - What the feeds send

    /// Writes `snapshot` of `feed`'s resource, the answer for the view's `inputs` (the feed
    /// already counts it as sent): as a patch from `base`, the document the client has, when
    /// there is one (`updates=patch`) and the patch is smaller than the document, else whole.
    /// True when the socket took it at once; else the stream's drained callback follows.
    func send(_ snapshot: Snapshot, from base: Snapshot?, answering inputs: [String: String], of feed: EventFeed) -> Bool {
        // A stream's SERVER span covers the request up to its first document, not its whole life.
        request.span?.end(status: 200)
        switch framing {
        case .single:
            if let base, let patch = frames.patchFrame(from: base, to: snapshot, of: feed.resource, diff: feed.diff) {
                return request.write(patch)
            }
            return request.write(frames.snapshotFrame(snapshot, of: feed.resource))
        case .multiplexed:
            let id = CompositeEventID.format(feeds.compactMap { feed in feed.sentVersion.map { (resource: feed.resource, version: $0) } })
            let patch = base.flatMap { frames.taggedPatch(from: $0, to: snapshot, of: feed.resource, diff: feed.diff, answering: inputs, id: id) }
            switch patch ?? frames.taggedSnapshot(snapshot, of: feed.resource, answering: inputs, id: id) {
            case .whole(let event): return request.write(event)
            case .parts(let head, let body): return request.write(head, then: body)
            }
        }
    }

    /// Writes `error` of `feed`'s resource, which failed the refresh for the view's `inputs`;
    /// true when the socket took it at once, as for a document.
    func send(_ error: ResourceError, answering inputs: [String: String], of feed: EventFeed) -> Bool {
        request.span?.end(status: 200)
        return request.write(EventStreamFormat.event("error", data: framing.errorData(error.httpError, of: feed.resource, answering: inputs)))
    }

    // MARK: - Closing

    /// Cancels every feed (their pipelines, and the upstream calls in flight, unless shared)
    /// and forgets the stream.
    private func close() {
        guard !isClosed else { return }
        isClosed = true
        for feed in feeds { feed.cancel() }
        onClose(self)
    }
}

/// One resource a new stream carries: its name, the view model its feed follows, how patches
/// of its documents are made, and whether its documents are per identity (the stream is then
/// `Cache-Control: private`).
struct StreamedResource {
    let name: String
    let view: any LiveViewModel
    /// The parameter values the view shows (a reload aimed at them reaches its stream).
    var parameters: ParameterValues = .none
    let diff: JSONDiff
    var isPrivate = false
}
