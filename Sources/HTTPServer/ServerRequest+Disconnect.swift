import CLibevent

/// Disconnect detection for open requests: while a request is open or streaming, its
/// ``ServerConnection`` watches the client (see `ServerConnection+Watch`), and a client that
/// is gone reaches ``onDisconnect``. The close callback itself belongs to the connection,
/// which hands the close to its open request.
extension ServerRequest {
    /// Starts watching the connection: the request becomes its connection's open request.
    func watchConnection() {
        guard isOpen, !isWatchingConnection, let server else { return }
        isWatchingConnection = true
        connection.watch(self, writeTimeout: server.limits.timeout)
    }

    /// Stops watching before a normal answer: keep-alive connections are reused, and a
    /// `Connection: close` answer frees the connection, which must not look like a disconnect.
    func stopWatchingConnection() {
        guard isWatchingConnection else { return }
        isWatchingConnection = false
        connection.stopWatching(readTimeout: server?.limits.timeout ?? .seconds(60))
    }

    /// The connection is being freed while this request was open.
    func connectionClosed() {
        isWatchingConnection = false
        guard let raw else { return }
        self.raw = nil
        // After EOF or an error evhttp has detached the request from the connection; nobody
        // else will free it. (When the server itself is freed, the request is still attached
        // and the connection frees it right after this callback.)
        if evhttp_request_get_connection(raw) == nil {
            evhttp_send_reply_end(raw)
        }
        state = .disconnected
        let onDisconnect = self.onDisconnect
        let follower = self.follower
        releaseCallbacks()
        server?.completed(self)
        onDisconnect?()
        follower?.streamDisconnected()
    }
}
