public import OpenCombine
public import EventLoop

extension UpstreamClient {
    /// A publisher of one call: the call starts when a subscriber requests a value, emits the
    /// response and finishes, or fails with ``UpstreamError``. Cancelling the subscription
    /// cancels the call (an in-flight request's connection is closed).
    ///
    /// ```
    /// subscribe ──request(1)──▶ call ──────────▶ response ─|
    ///                                 cancel ──▶ connection closed upstream
    /// ```
    ///
    /// ```swift
    /// client.publisher(for: UpstreamRequest(base: tasks, path: "/groups"))
    ///     .tryMap { try decode($0.body) }
    /// ```
    public func publisher(for request: UpstreamRequest) -> OneResultPublisher<UpstreamResponse, UpstreamError> {
        OneResultPublisher { [self] finish in execute(request, completion: finish) }
    }
}

extension UpstreamCall: Cancellable {}
