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
            let server = RedisServerProcess(port: try port ?? LoopbackPort.free(), password: password, directory: try makeDirectory())
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

    private static let exitedMarker = ChildProcess.outputEndedMarker

    private static func spawn(_ arguments: [String], output: Observed<String>) throws -> pid_t {
        do {
            return try ChildProcess.spawn("redis-server", arguments, output: output)
        } catch {
            throw RedisServerError("\(error): install the redis-server package")
        }
    }
}

/// A test Redis server that could not be started.
public struct RedisServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
