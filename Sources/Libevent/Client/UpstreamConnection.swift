import CLibevent

/// One `evhttp_connection` to an upstream origin: one request at a time, kept alive between
/// requests by its ``ConnectionPool``. Freed in `deinit` (never inside its own callback:
/// the pool drops connections on a later loop turn).
final class UpstreamConnection {
    let evcon: OpaquePointer
    let isTLS: Bool

    init?(loop: EventLoop, origin: BaseURL.Origin, dns: OpaquePointer?, tls: TLSContext?, limits: UpstreamClient.Configuration) {
        isTLS = origin.isTLS
        if origin.isTLS {
            guard let tls, let bufferEvent = tls.clientBufferEvent(base: loop.base, host: origin.host) else { return nil }
            // Servers often close TLS connections without close_notify; that is not an error.
            bufferevent_openssl_set_allow_dirty_shutdown(bufferEvent, 1)
            guard let evcon = evhttp_connection_base_bufferevent_new(loop.base, dns, bufferEvent, origin.host, origin.port)
            else { return nil }
            self.evcon = evcon
        } else {
            guard let evcon = evhttp_connection_base_new(loop.base, dns, origin.host, origin.port) else { return nil }
            self.evcon = evcon
        }
        var timeout = timeval(limits.connectionTimeout)
        evhttp_connection_set_timeout_tv(evcon, &timeout)
        evhttp_connection_set_max_body_size(evcon, limits.maxResponseBytes)
        evhttp_connection_set_max_headers_size(evcon, limits.maxResponseHeaderBytes)
    }

    deinit {
        evhttp_connection_free(evcon)
    }

    /// Whether the socket is open (a reset connection reconnects on its next request).
    var isConnected: Bool {
        bufferevent_getfd(evhttp_connection_get_bufferevent(evcon)) >= 0
    }

    /// Whether it can carry another request: a TLS session cannot be resumed on a new socket
    /// by evhttp, so a TLS connection that was reset is replaced instead.
    var isReusable: Bool { !isTLS || isConnected }

    /// The oldest OpenSSL error on this connection, described, or nil.
    var tlsFailure: String? {
        guard isTLS else { return nil }
        let code = bufferevent_get_openssl_error(evhttp_connection_get_bufferevent(evcon))
        return code == 0 ? nil : TLSError.openSSLReason(code)
    }
}
