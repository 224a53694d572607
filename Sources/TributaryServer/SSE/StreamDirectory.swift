package import Aggregation
package import EventLoop
import Fleet
package import HTTPServer
import Synchronization

/// Which worker holds each live stream, for the whole process, and what it shows: its
/// resource and the parameter values it was opened with.
///
/// A stream lives on the worker whose loop accepted its connection, but the client's
/// `POST /streams/{id}/triggers/…` may reach any worker (SO_REUSEPORT spreads connections),
/// so stream control looks the stream up here and runs on the holding worker's loop; so does
/// a reload of the streams that have pipelines of their own (`kind: pages`), and, in a fleet,
/// a control another replica forwarded here (``LocalStreams``). The one lock guards only the
/// directory; everything it points to stays on its own loop.
public final class StreamDirectory: ReloadTargets {
    public init() {}

    /// A worker's hub as the directory knows it: its loop, and the hub itself, weakly (a
    /// worker's hub owns its listing, not the other way around). Read the hub on its loop.
    final class Listing: @unchecked Sendable {
        let loop: EventLoop
        weak var hub: EventStreamHub?

        init(hub: EventStreamHub, loop: EventLoop) {
            self.hub = hub
            self.loop = loop
        }
    }

    /// A live stream: the worker holding it, its resource and its parameter values.
    private struct Holder {
        let listing: Listing
        let resource: String
        let parameters: ParameterValues
    }

    private let listings = Mutex<[Listing]>([])
    private let holders = Mutex<[StreamID: Holder]>([:])

    /// A worker's hub joins the directory.
    func add(_ listing: Listing) {
        listings.withLock { $0.append(listing) }
    }

    /// A worker's hub leaves it (the worker is going away).
    func remove(_ listing: Listing) {
        listings.withLock { $0.removeAll { $0 === listing } }
        holders.withLock { $0 = $0.filter { $0.value.listing !== listing } }
    }

    /// Stream `id` of `resource`, opened with `parameters`, is held by `listing`'s worker.
    func opened(_ id: StreamID, of resource: String, with parameters: ParameterValues, in listing: Listing) {
        holders.withLock { $0[id] = Holder(listing: listing, resource: resource, parameters: parameters) }
    }

    func closed(_ id: StreamID) {
        _ = holders.withLock { $0.removeValue(forKey: id) }
    }

    /// The listing of the worker holding stream `id`, if it is live.
    func listing(holding id: StreamID) -> Listing? {
        holders.withLock { $0[id]?.listing }
    }

    /// How many live streams `aim` names (their resource, parameter values holding its values).
    func count(_ aim: ReloadAim) -> Int {
        holders.withLock { $0.values.filter { aim.aims(at: $0.resource, $0.parameters) }.count }
    }

    /// Activates `reload` on every live stream `aim` names, on the loop of the worker holding
    /// it (for streams with pipelines of their own: each reloads its own); returns how many.
    package func reload(_ aim: ReloadAim) -> Int {
        let aimed = holders.withLock { holders in
            Dictionary(grouping: holders.filter { aim.aims(at: $0.value.resource, $0.value.parameters) }) { ObjectIdentifier($0.value.listing) }
        }
        for streams in aimed.values {
            let listing = streams[0].value.listing
            let ids = streams.map(\.key)
            listing.loop.execute { listing.hub?.activate("reload", on: ids) }
        }
        return aimed.values.reduce(0) { $0 + $1.count }
    }

    /// Applies `control` to stream `id` on the loop of the worker holding it, for the holder
    /// of a token of subject `subject` (its identity's digest; nil: no token: see
    /// ``EventStreamHub/control(_:_:by:)``), then hands the outcome to `answer` on `loop`.
    /// False (and `answer` never runs) when no worker of this process holds the stream.
    package func apply(
        _ control: StreamControl, to id: StreamID, by subject: String? = nil, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) -> Bool {
        guard let holder = listing(holding: id) else { return false }
        let gone = HTTPError(status: 404, code: "unknown_stream", message: "no live stream \(id.redacted)")
        guard holder.loop !== loop else {
            answer(holder.hub?.control(id, control, by: subject) ?? .failure(gone))
            return true
        }
        holder.loop.execute {
            let outcome = holder.hub?.control(id, control, by: subject) ?? .failure(gone)
            loop.execute { answer(outcome) }
        }
        return true
    }
}

extension StreamDirectory: LocalStreams {}
