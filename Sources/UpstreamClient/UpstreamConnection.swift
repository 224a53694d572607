/// One keep-alive connection to an upstream origin, as its ``ConnectionPool`` sees it: it
/// carries one request at a time and reports how that ended to the request's ``UpstreamCall``.
///
/// Two kinds exist: ``SocketConnection`` for plain HTTP (a socket of its own, one `send` and
/// one `recv` per exchange) and ``EvhttpConnection`` for HTTPS (evhttp's client over an
/// OpenSSL bufferevent). Loop-confined.
protocol UpstreamConnection: AnyObject {
    /// Sends `call`'s request. The connection then calls ``UpstreamCall/answered(_:reusable:)``
    /// or ``UpstreamCall/failed(_:_:)`` exactly once, unless ``withdraw()`` comes first, and
    /// never inside `send` itself: a failure found there is reported on a later loop turn, so
    /// that a pool dispatching its line never recurses through a connect that fails at once.
    func send(_ call: UpstreamCall)

    /// Drops the request in flight (its caller cancelled, or its deadline passed): the
    /// connection closes, so the upstream sees it, and reports nothing more.
    func withdraw()

    /// Whether it can carry another request at `now` (a clock reading the caller already
    /// has): connected or able to reconnect, with nothing left over from the last answer.
    func isReusable(at now: MonotonicInstant) -> Bool

    /// Takes the socket of an idle, open connection out of it, for another loop's pool to
    /// adopt (``ConnectionPool``'s lending): its events leave this loop, and the connection is
    /// closed without closing the socket. Nil when it cannot be handed over (busy, not open,
    /// or not a plain socket).
    func detachSocket() -> LentSocket?
}

/// An open, idle upstream socket on its way from one loop's pool to another's, with its place
/// in the ``ConnectionBudget``.
struct LentSocket: Sendable {
    let descriptor: Int32
    /// When its last answer ended (see ``SocketConnection``'s idle limit).
    let idleSince: MonotonicInstant?
}
