import CLibevent

/// One client connection of an ``HTTPServer``, known from its first request until it closes.
///
/// It owns the connection's close callback (evhttp calls it when it frees the connection,
/// whatever the reason: the client left, a `Connection: close` answer went out, the server is
/// shut down), which keeps the server's connection count exact and tells the request still
/// open on it, if any, that its client is gone. The callback's context holds one retain of
/// this object, released by the callback. Loop-confined.
final class ServerConnection {
    /// Weak: when the server is freed it frees its connections, calling back here during its
    /// own deinit.
    weak var server: HTTPServer?
    let evcon: OpaquePointer
    /// The request being answered on this connection while it is open or streaming
    /// (evhttp serves a connection's requests one at a time).
    var openRequest: ServerRequest?

    init(server: HTTPServer, evcon: OpaquePointer) {
        self.server = server
        self.evcon = evcon
        evhttp_connection_set_closecb(evcon, { _, context in
            Unmanaged<ServerConnection>.fromOpaque(context!).takeRetainedValue().closed()
        }, Unmanaged.passRetained(self).toOpaque())
    }

    var bufferEvent: OpaquePointer { evhttp_connection_get_bufferevent(evcon) }

    /// Bytes written to this connection that the socket has not taken yet.
    var pendingOutputBytes: Int { evbuffer_get_length(bufferevent_get_output(bufferEvent)) }

    private func closed() {
        server?.forget(self)
        let request = openRequest
        openRequest = nil
        request?.connectionClosed()
    }
}
