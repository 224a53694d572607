import Foundation
import Glibc
import Synchronization

/// An upstream that answers with raw bytes of the test's choosing, for what an HTTP library
/// would refuse to send: a body after a 204, bytes beyond `Content-Length`, a chunk-size line
/// that never ends. It listens on loopback, reads each request's head, and does what the
/// script says. Every connection runs on a thread of its own (never on Swift's cooperative
/// pool), with blocking sockets whose writes time out, so a script cannot hang a test.
///
/// ```swift
/// let upstream = try RawUpstream.start { request in
///     .send(Array("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhacked".utf8))
/// }
/// defer { upstream.stop() }
/// ```
public final class RawUpstream: Sendable {
    /// What to do after reading a request's head.
    public enum Action: Sendable {
        /// Write these bytes, then read the connection's next request.
        case send([UInt8])
        /// Write these bytes, then close the connection.
        case sendAndClose([UInt8])
        /// Write `prefix`, then `filler` repeated until `limit` bytes were written or the
        /// client stops taking them (closes, or leaves them unread for the write timeout).
        case flood(prefix: [UInt8], filler: UInt8, limit: Int)
        /// Write each piece in a write of its own, with Nagle's algorithm off and a 2 ms pause
        /// between pieces, then read the connection's next request: the client most often
        /// gets each piece in a read of its own. The pause only spreads the bytes; what a test
        /// asserts must never depend on it.
        case sendInPieces([[UInt8]])
        /// Write these bytes, then read nothing more (whatever else the client sends stays
        /// in the socket's buffers) until the client closes the connection.
        case sendThenHold([UInt8])
    }

    /// One request head as received, with its connection's number (0, 1, … in accept order).
    public struct Request: Sendable {
        public let connection: Int
        public let head: String
    }

    public let port: UInt16
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    /// Every request head received, in order.
    public let requests = Observed<[Request]>([])
    /// Bytes written by each flood that ended (the client closed or stopped reading).
    public let floods = Observed<[Int]>([])
    /// Connections accepted.
    public let connections = Observed(0)
    /// The numbers of the connections closed so far (by the script, or after the client
    /// closed its end), in the order they closed.
    public let closed = Observed<[Int]>([])

    private let listener: Int32
    private let open = OpenSockets()

    private init(listener: Int32, port: UInt16) {
        self.listener = listener
        self.port = port
    }

    /// Starts listening on a free loopback port; `script` is asked once per request.
    public static func start(script: @escaping @Sendable (Request) -> Action) throws -> RawUpstream {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw TestClientError.system("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 128) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(listener)
            throw TestClientError.system("bind/listen", code)
        }
        let upstream = RawUpstream(listener: listener, port: UInt16(bigEndian: address.sin_port))
        let accepting = Thread { upstream.acceptLoop(script: script) }
        accepting.start()
        return upstream
    }

    /// Stops accepting and shuts every connection down (their threads then close them and end).
    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        open.closeAll()
    }

    private func acceptLoop(script: @escaping @Sendable (Request) -> Action) {
        var number = 0
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { break }
            guard open.add(client) else {
                close(client)
                break
            }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            connections.update { $0 += 1 }
            let connection = number
            number += 1
            Thread { self.serve(client, connection: connection, script: script) }.start()
        }
        close(listener)
    }

    private func serve(_ client: Int32, connection: Int, script: @Sendable (Request) -> Action) {
        defer {
            open.close(client)
            closed.update { $0.append(connection) }
        }
        var buffered: [UInt8] = []
        let headEnd = Array("\r\n\r\n".utf8)
        while true {
            while buffered.firstRange(of: headEnd) == nil {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { return }
                buffered += chunk[..<count]
            }
            let end = buffered.firstRange(of: headEnd)!
            let request = Request(connection: connection, head: String(decoding: buffered[..<end.lowerBound], as: UTF8.self))
            buffered.removeSubrange(..<end.upperBound)
            requests.update { $0.append(request) }
            switch script(request) {
            case .send(let bytes):
                guard write(bytes, to: client) == bytes.count else { return }
            case .sendAndClose(let bytes):
                _ = write(bytes, to: client)
                return
            case .flood(let prefix, let filler, let limit):
                var written = write(prefix, to: client)
                let block = [UInt8](repeating: filler, count: 16 * 1024)
                while written < limit {
                    let sent = write(Array(block.prefix(limit - written)), to: client)
                    written += sent
                    if sent < min(block.count, limit - written + sent) { break }
                }
                floods.update { $0.append(written) }
                return
            case .sendThenHold(let bytes):
                _ = write(bytes, to: client)
                // POLLRDHUP (0x2000, a GNU macro Swift does not import) alone: woken by the
                // client's close, not by the bytes it sent.
                var entry = pollfd(fd: client, events: 0x2000, revents: 0)
                while poll(&entry, 1, -1) < 0 && errno == EINTR {}
                return
            case .sendInPieces(let pieces):
                var noDelay: Int32 = 1
                setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
                for (index, piece) in pieces.enumerated() {
                    if index > 0 { usleep(2000) }
                    guard write(piece, to: client) == piece.count else { return }
                }
            }
        }
    }

    /// Writes what the socket takes; returns how many bytes it took before an error or the
    /// write timeout.
    private func write(_ bytes: [UInt8], to client: Int32) -> Int {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { break }
            offset += sent
        }
        return offset
    }
}

/// The sockets a ``RawUpstream`` has open, so ``RawUpstream/stop()`` can close them.
private final class OpenSockets: Sendable {
    private let state = Mutex<(sockets: Set<Int32>, stopped: Bool)>(([], false))

    func add(_ socket: Int32) -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.sockets.insert(socket)
            return true
        }
    }

    func close(_ socket: Int32) {
        let owned = state.withLock { $0.sockets.remove(socket) != nil }
        if owned { Glibc.close(socket) }
    }

    /// Shuts every socket down; the thread serving each one sees that and closes it.
    func closeAll() {
        let sockets = state.withLock { state in
            state.stopped = true
            return state.sockets
        }
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }
}
