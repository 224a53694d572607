import Foundation
import Glibc
import Synchronization

/// A real `redis-server` for tests: on a free loopback port (127.0.0.1, and ::1 where the
/// machine has IPv6), nothing persisted, in a directory of its own. Tests crash it
/// (``kill()``), freeze it (``pause()``/``resume()``), bring it back on the same port
/// (``restart()``) and stop it, always by its PID.
///
/// Started means ready: ``start(password:)`` returns once the server has logged "Ready to
/// accept connections" (its output is read as it comes, no polling); if it exits first, the
/// error carries its log.
///
/// ```swift
/// let redis = try await RedisServerProcess.start()
/// let endpoint = try RedisEndpoint(redis.url)         // redis://127.0.0.1:PORT
/// redis.kill()                                        // SIGKILL: clients see the connection drop
/// try await redis.restart()                           // same port, empty data set
/// redis.stop()
/// ```
public final class RedisServerProcess: Sendable {
    public let port: UInt16
    public let password: String?
    private let directory: String
    private let running: Mutex<Running?>

    /// One run of the server: its PID and what it printed.
    private struct Running {
        let pid: pid_t
        let output: Observed<String>
    }

    private init(port: UInt16, password: String?, directory: String) {
        self.port = port
        self.password = password
        self.directory = directory
        running = Mutex(nil)
    }

    deinit {
        stop()
        rmdir(directory)
    }

    /// Starts a server on `port` (nil: a free one) and waits until it accepts connections.
    public static func start(
        port: UInt16? = nil, password: String? = nil, timeout: Duration = .seconds(10)
    ) async throws -> RedisServerProcess {
        // A free port may still be taken by another test before the server binds it: then
        // another one (three tries), unless the caller chose the port.
        var attempt = 1
        while true {
            let server = RedisServerProcess(port: try port ?? freePort(), password: password, directory: try makeDirectory())
            do {
                try await server.launch(timeout: timeout)
                return server
            } catch let error as RedisServerError where port == nil && attempt < 3 && error.description.contains("Address already in use") {
                attempt += 1
            }
        }
    }

    private static func makeDirectory() throws -> String {
        var template = Array("/tmp/tributary-redis-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw RedisServerError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `redis://127.0.0.1:PORT`, with the password when there is one.
    public var url: String {
        password.map { "redis://:\($0)@127.0.0.1:\(port)" } ?? "redis://127.0.0.1:\(port)"
    }

    /// The running server's PID (nil once killed or stopped).
    public var pid: Int32? { running.withLock { $0?.pid } }

    /// What the running server has printed so far.
    public var log: String { running.withLock { $0?.output.value ?? "" } }

    /// SIGKILL: the server dies at once, its clients see their connections reset.
    public func kill() {
        guard let pid = running.withLock({ running in defer { running = nil }; return running?.pid }) else { return }
        Glibc.kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
    }

    /// SIGSTOP: the server stops answering; connections stay open (the kernel still accepts).
    public func pause() {
        if let pid { Glibc.kill(pid, SIGSTOP) }
    }

    /// SIGCONT after ``pause()``.
    public func resume() {
        if let pid { Glibc.kill(pid, SIGCONT) }
    }

    /// Starts the server again on the same port (after ``kill()`` or ``stop()``), empty.
    public func restart(timeout: Duration = .seconds(10)) async throws {
        guard pid == nil else { throw RedisServerError("restart: the server on port \(port) is still running") }
        try await launch(timeout: timeout)
    }

    /// Stops the server: SIGTERM (and SIGCONT, should it be paused), then SIGKILL if it has
    /// not exited within 5 s. Does nothing when it is not running.
    public func stop() {
        guard let pid = running.withLock({ running in defer { running = nil }; return running?.pid }) else { return }
        Glibc.kill(pid, SIGTERM)
        Glibc.kill(pid, SIGCONT)
        for _ in 0..<500 {
            if waitpid(pid, nil, WNOHANG) == pid { return }
            usleep(10_000)
        }
        Glibc.kill(pid, SIGKILL)
        waitpid(pid, nil, 0)
    }

    /// A loopback TCP port nothing uses now, below the kernel's ephemeral range: a port the
    /// kernel picks for port 0 is also a candidate source port of every outgoing connection,
    /// so another test's client could take it before the server binds it (or while it is
    /// down, before ``restart()``).
    public static func freePort() throws -> UInt16 {
        let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first }
            .flatMap { Int($0) } ?? 32768
        let candidates = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<100 {
            let port = UInt16(Int.random(in: candidates))
            if isFree(port) { return port }
        }
        throw RedisServerError("no free loopback port found below \(ephemeralStart)")
    }

    private static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    // MARK: - Running the process

    private func launch(timeout: Duration) async throws {
        var arguments = [
            "redis-server", "--port", "\(port)", "--bind", "127.0.0.1", "-::1", "--save", "", "--appendonly", "no",
            "--dir", directory, "--daemonize", "no",
        ]
        if let password { arguments += ["--requirepass", password] }
        let output = Observed("")
        let pid = try Self.spawn(arguments, output: output)
        running.withLock { $0 = Running(pid: pid, output: output) }
        let ready = await output.wait(timeout: timeout) {
            $0.contains("Ready to accept connections") || $0.contains(Self.exitedMarker)
        }
        guard ready, output.value.contains("Ready to accept connections") else {
            stop()
            throw RedisServerError("redis-server on port \(port) did not become ready:\n\(output.value)")
        }
    }

    private static let exitedMarker = "[redis-server output ended]"

    /// Spawns `arguments` with stdout and stderr into a pipe that a thread reads into `output`.
    private static func spawn(_ arguments: [String], output: Observed<String>) throws -> pid_t {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw RedisServerError("pipe failed") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        // Other processes spawned meanwhile must not inherit the write end: the reader would
        // never see EOF. (The child gets its copies through dup2, which clears the flag.)
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)

        // The child starts with no signal blocked and default handlers: the test process
        // ignores SIGPIPE and its threads may block signals, and both would be inherited
        // (a redis-server that never sees SIGTERM).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, "redis-server", &actions, &attributes, argv, environ)
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            throw RedisServerError("cannot run redis-server (\(String(cString: strerror(status)))): install the redis-server package")
        }
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                output.update { $0 += text }
            }
            close(readEnd)
            output.update { $0 += "\n" + exitedMarker }
        }
        reader.start()
        return pid
    }
}

/// A test Redis server that could not be started.
public struct RedisServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
