package import Aggregation
package import EventLoop
package import HTTPServer

/// This process's live streams, as the fleet reaches them: the control of a stream, which
/// another replica forwarded to this one (``ClusterAgent/forward(_:to:by:_:)`` there), and a
/// reload aimed at the streams that have pipelines of their own. The service's stream
/// directory answers both on the workers holding the streams; the fleet knows nothing else
/// of the service.
package protocol LocalStreams: Sendable {
    /// Applies `control` to stream `id` on the loop of the worker holding it, for the holder
    /// of a token of subject `subject` (its identity's digest; nil: no token), then hands the
    /// outcome to `answer` on `loop`. False (and `answer` never runs) when no worker of this
    /// process holds the stream.
    func apply(
        _ control: StreamControl, to id: StreamID, by subject: String?, answeringOn loop: EventLoop,
        _ answer: @escaping @Sendable (Result<Void, HTTPError>) -> Void
    ) -> Bool

    /// Reloads every live stream `aim` names, each on the loop of the worker holding it;
    /// returns how many.
    func reload(_ aim: ReloadAim) -> Int
}
