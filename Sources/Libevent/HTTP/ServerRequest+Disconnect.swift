import CLibevent

/// Disconnect detection for open requests.
///
/// While a handler is pending, evhttp stops reading the connection, so a client that drops an
/// unanswered request is never noticed. Watching re-arms reading on the connection's
/// bufferevent with a NULL read callback (evhttp's own read callback would abort the process
/// on pipelined bytes) and keeps evhttp's write and event callbacks; EOF or an error then
/// reaches evhttp's event callback, which detaches the request and frees the connection,
/// calling the connection's close callback. Streaming is covered by the same watch
/// (evhttp reads with a NULL callback while writing, too).
///
/// The read timeout is lifted while watching: a client that waits quietly for a slow answer
/// or an event stream is not idle. It is restored when the answer is complete. The close
/// callback itself belongs to the ``ServerConnection``, which hands the close to its open
/// request.
extension ServerRequest {
    /// Starts watching the connection: the request becomes its connection's open request.
    func watchConnection() {
        guard isOpen, !isWatchingConnection, let server else { return }
        let bufferEvent = connection.bufferEvent
        var readCallback: bufferevent_data_cb?
        var writeCallback: bufferevent_data_cb?
        var eventCallback: bufferevent_event_cb?
        var callbackArgument: UnsafeMutableRawPointer?
        bufferevent_getcb(bufferEvent, &readCallback, &writeCallback, &eventCallback, &callbackArgument)
        bufferevent_setcb(bufferEvent, nil, writeCallback, eventCallback, callbackArgument)
        var writeTimeout = timeval(server.limits.timeout)
        bufferevent_set_timeouts(bufferEvent, nil, &writeTimeout)
        bufferevent_enable(bufferEvent, Int16(EV_READ))
        isWatchingConnection = true
        connection.openRequest = self
    }

    /// Stops watching before a normal answer: keep-alive connections are reused, and a
    /// `Connection: close` answer frees the connection, which must not look like a disconnect.
    func stopWatchingConnection() {
        guard isWatchingConnection else { return }
        isWatchingConnection = false
        connection.openRequest = nil
        guard let server else { return }
        var timeout = timeval(server.limits.timeout)
        bufferevent_set_timeouts(connection.bufferEvent, &timeout, &timeout)
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
        releaseCallbacks()
        server?.completed(self)
        onDisconnect?()
    }
}
