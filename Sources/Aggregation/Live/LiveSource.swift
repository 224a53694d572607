public import OpenCombine

/// Where a worker gets a live resource's states: the pipeline itself (``LiveResource``, on
/// the worker that owns it) or a bridge to the owner's loop (``RemoteLiveResource``, on every
/// other worker), so a process runs ONE pipeline per live resource however many workers it has.
public protocol LiveSource: AnyObject {
    var name: String { get }
    /// The shared states: the latest at once, then every change; the last subscriber leaving
    /// (process-wide) stops the pipeline.
    var states: AnyPublisher<LiveState, Never> { get }
    /// Refreshes now, for every subscriber of every worker.
    func reload()
    /// No stream will follow it again (its key was forgotten): what it holds beyond its
    /// pipeline (a lease in a fleet) goes now.
    func retire()
}

extension LiveSource {
    public func retire() {}
}

extension LiveResource: LiveSource {}
