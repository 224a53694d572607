import Foundation
import Glibc

/// A plain TCP client on loopback (IPv4 or IPv6), speaking HTTP/1.1 by hand, so tests control exactly what is
/// sent and when the connection closes (like curl, or a browser tab that goes away). Every wait
/// on the network is bounded by the connection's timeout and suspends the task instead of
/// blocking a thread of the cooperative pool (the socket is non-blocking, ``Poller`` waits), so
/// tests stay free to run side by side on a machine with few cores. Use it from one task at a
/// time.
///
/// ```swift
/// let connection = try await TestConnection(port: port)
/// try await connection.send("GET /groups HTTP/1.1\r\nHost: x\r\n\r\n")
/// let response = try await connection.readResponse()
/// ```
public final class TestConnection {
    public let port: UInt16
    private var fd: Int32
    private var timeout: Duration
    private var buffered: [UInt8] = []
    /// Whether the server closed its side (EOF or reset).
    public private(set) var peerClosed = false

    /// Connects to `host:port` (`host` a loopback address: `127.0.0.1` or `::1`), waiting at
    /// most `timeout`; `receiveBuffer` caps the socket's receive buffer (SO_RCVBUF, set before
    /// connecting so the TCP window honours it), to play a slow reader; `sendBuffer` caps its
    /// send buffer (SO_SNDBUF), so that what a flood gets out is what the server took, not what
    /// this side's kernel queued.
    public init(
        host: String = "127.0.0.1", port: UInt16, timeout: Duration = .seconds(10), receiveBuffer: Int? = nil, sendBuffer: Int? = nil
    ) async throws {
        self.port = port
        self.timeout = timeout
        let isIPv6 = host.contains(":")
        fd = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestClientError.system("socket", errno) }
        if var size = receiveBuffer.map(Int32.init(clamping:)) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        if var size = sendBuffer.map(Int32.init(clamping:)) {
            setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let (started, startCode) = isIPv6 ? Self.connect(fd, toIPv6: host, port: port) : Self.connect(fd, toIPv4: host, port: port)
        do {
            if started != 0 {
                guard startCode == EINPROGRESS else { throw TestClientError.system("connect to \(host) port \(port)", startCode) }
                try await ready(for: .writable, until: .now + timeout)
                var code: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                guard code == 0 else { throw TestClientError.system("connect to \(host) port \(port)", code) }
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Starts connecting `fd` (non-blocking): `connect(2)`'s result and `errno`.
    private static func connect(_ fd: Int32, toIPv4 host: String, port: UInt16) -> (Int32, Int32) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { (Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)), errno) }
        }
    }

    private static func connect(_ fd: Int32, toIPv6 host: String, port: UInt16) -> (Int32, Int32) {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = port.bigEndian
        inet_pton(AF_INET6, host, &address.sin6_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { (Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)), errno) }
        }
    }

    /// Bounds every following wait: each read (and each send that finds no room) throws
    /// ``TestClientError/timedOut`` after this long without progress.
    public func setTimeout(_ timeout: Duration) {
        self.timeout = timeout
    }

    /// Sends `text` as UTF-8, byte for byte (tests write malformed requests with it too).
    public func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Sends all of `bytes`, waiting for room in the socket's send buffer when it is full.
    public func send(_ bytes: [UInt8]) async throws {
        let (_, failure) = await write(bytes) { .now + self.timeout }
        if let failure { throw failure }
    }

    /// Sends as much of `bytes` as the server takes within `timeout` (it stops reading when
    /// its bounds are reached); returns how many bytes went out.
    public func sendWhileTaken(_ bytes: [UInt8], timeout: Duration) async -> Int {
        let deadline = ContinuousClock.now + timeout
        return await write(bytes) { deadline }.sent
    }

    /// Writes `bytes` until they all went out, the socket fails, or it stays full past the
    /// deadline asked for before each wait; says how many went out, and why it stopped early.
    private func write(
        _ bytes: [UInt8], waitingUntil deadline: () -> ContinuousClock.Instant
    ) async -> (sent: Int, failure: (any Error)?) {
        var offset = 0
        while offset < bytes.count {
            let (sent, code) = bytes[offset...].withUnsafeBytes { (Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)), errno) }
            if sent > 0 {
                offset += sent
            } else if sent < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                do {
                    try await ready(for: .writable, until: deadline())
                } catch {
                    return (offset, error)
                }
            } else {
                return (offset, TestClientError.system("send", code))
            }
        }
        return (offset, nil)
    }

    /// Shuts the sending side (a half-close: the server sees EOF, and may still answer).
    public func finishSending() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Sends a request with `Host` and, when there is a body, `Content-Length`.
    public func sendRequest(
        _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        try await send(Array((head + "\r\n").utf8) + body)
    }

    /// Closes the socket (the server sees EOF). Idempotent.
    public func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Closes with a TCP reset instead of a FIN (SO_LINGER 0), like a crashed client.
    public func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    // MARK: - Reading

    var bufferedBytes: [UInt8] { buffered }

    func takeBuffered() -> [UInt8] {
        defer { buffered.removeAll() }
        return buffered
    }

    /// Suspends until the socket is ready; throws ``TestClientError/timedOut`` past `deadline`.
    private func ready(for readiness: Poller.Readiness, until deadline: ContinuousClock.Instant) async throws {
        guard try await Poller.shared.wait(for: readiness, on: fd, until: deadline) else { throw TestClientError.timedOut }
    }

    /// Reads more bytes into the buffer; false at EOF. Throws when nothing arrives within the timeout.
    @discardableResult
    func fill() async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let (count, code) = chunk.withUnsafeMutableBytes { (recv(fd, $0.baseAddress, $0.count, 0), errno) }
            if count > 0 {
                buffered += chunk[..<count]
                return true
            }
            if count == 0 || code == ECONNRESET {
                peerClosed = true
                return false
            }
            guard code == EAGAIN || code == EWOULDBLOCK else { throw TestClientError.system("recv", code) }
            try await ready(for: .readable, until: deadline)
        }
    }

    /// Reads until `delimiter`, returning what precedes it (the delimiter is consumed).
    func read(until delimiter: [UInt8]) async throws -> [UInt8] {
        while true {
            if let range = buffered.firstRange(of: delimiter) {
                let result = Array(buffered[..<range.lowerBound])
                buffered.removeSubrange(..<range.upperBound)
                return result
            }
            guard try await fill() else { throw TestClientError.closed(received: buffered) }
        }
    }

    func read(count: Int) async throws -> [UInt8] {
        while buffered.count < count {
            guard try await fill() else { throw TestClientError.closed(received: buffered) }
        }
        let result = Array(buffered[..<count])
        buffered.removeSubrange(..<count)
        return result
    }

    /// Reads a status line and headers.
    public func readHead() async throws -> TestResponse {
        let head = String(decoding: try await read(until: Array("\r\n\r\n".utf8)), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw TestClientError.malformed(head) }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return TestResponse(status: status, headers: headers, body: [])
    }

    /// Reads a whole response: head, then a body by `Content-Length`, chunks, or until close.
    /// Interim (1xx) answers before it are skipped, as every HTTP/1.1 client must.
    public func readResponse(method: String = "GET") async throws -> TestResponse {
        var response = try await readHead()
        while (100..<200).contains(response.status) && response.status != 101 { response = try await readHead() }
        if method == "HEAD" || response.status == 204 || response.status == 304 { return response }
        if response.header("Transfer-Encoding")?.lowercased().contains("chunked") == true {
            while let chunk = try await readChunk() { response.body += chunk }
        } else if let length = response.header("Content-Length").flatMap(Int.init) {
            response.body = try await read(count: length)
        } else {
            while try await fill() {}
            response.body = buffered
            buffered = []
        }
        return response
    }

    /// The next chunk of a chunked body, or nil after the last (zero-length) chunk.
    public func readChunk() async throws -> [UInt8]? {
        let sizeLine = String(decoding: try await read(until: Array("\r\n".utf8)), as: UTF8.self)
        guard let size = Int(sizeLine.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else {
            throw TestClientError.malformed("chunk size \(sizeLine)")
        }
        if size == 0 {
            _ = try await read(until: Array("\r\n".utf8))
            return nil
        }
        let data = try await read(count: size)
        _ = try await read(count: 2)
        return data
    }

    /// Waits at most `timeout` for the server to close the connection, discarding what
    /// arrives; false if it is still open. The connection's own timeout applies afterwards.
    public func waitForClose(within timeout: Duration) async -> Bool {
        let usual = self.timeout
        self.timeout = timeout
        defer { self.timeout = usual }
        return await waitForClose()
    }

    /// Waits for the server to close the connection, discarding what arrives; false on timeout.
    public func waitForClose() async -> Bool {
        while true {
            do {
                guard try await fill() else { return true }
                buffered.removeAll()
            } catch {
                return false
            }
        }
    }
}

/// One task at a time: a connection's buffer and socket are not guarded against concurrent use.
@available(*, unavailable)
extension TestConnection: Sendable {}

/// A response as the test client read it.
public struct TestResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON (arrays, dictionaries, strings, numbers, booleans, NSNull).
    public func json() throws -> Any { try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) }

    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(type, from: Data(body)) }
}

public enum TestClientError: Error, CustomStringConvertible {
    case system(String, Int32)
    case timedOut
    case closed(received: [UInt8])
    case malformed(String)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .timedOut: "timed out waiting for the server"
        case .closed(let received): "connection closed after \(received.count) bytes: \(String(decoding: received.prefix(200), as: UTF8.self))"
        case .malformed(let what): "malformed response: \(what)"
        }
    }
}

/// One-shot requests over a fresh connection.
public enum TestHTTP {
    /// Connects, sends one request, reads its whole response and closes.
    public static func request(
        host: String = "127.0.0.1", port: UInt16, _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: Duration = .seconds(10)
    ) async throws -> TestResponse {
        let connection = try await TestConnection(host: host, port: port, timeout: timeout)
        defer { connection.close() }
        try await connection.sendRequest(method, path, headers: headers, body: body)
        return try await connection.readResponse(method: method)
    }

    /// ``request(host:port:_:_:headers:body:timeout:)`` with `GET`.
    public static func get(port: UInt16, _ path: String, headers: [(String, String)] = []) async throws -> TestResponse {
        try await request(port: port, "GET", path, headers: headers)
    }

    /// Waits until the service on `port` says it is ready (`GET /readyz` answers 200; in a
    /// fleet, once it has joined): true, or false once `timeout` passed. Asks every 20 ms, as
    /// only the service knows. A test that needs a service in its fleet waits for this, never
    /// for a time: a busy machine takes as long as it takes.
    public static func ready(port: UInt16, timeout: Duration = .seconds(20)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? await get(port: port, "/readyz").status) == 200 { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }
}
