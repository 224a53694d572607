import Foundation
import Glibc

/// Starting the real servers the tests run beside the service (`redis-server`, `nginx`): a
/// program whose standard output and error are read, as they come, into an ``Observed``
/// string that a test awaits ("Ready to accept connections"), never polled. The caller owns
/// the PID and stops it by that PID.
enum ChildProcess {
    /// Appended to the output once the program closed it (it exited, or closed both streams).
    static let outputEndedMarker = "[output ended]"

    /// Spawns `executable` (a path, or a name looked up in `PATH`) with `arguments` (the
    /// program name first), standard input from /dev/null, standard output and error into a
    /// pipe that a thread reads into `output`. With `ownProcessGroup`, the child leads a new
    /// process group (its PID is the group's id), so a program that forks workers can be
    /// stopped whole with `kill(-pid, …)`. It runs in `workingDirectory` (else this process's)
    /// with exactly `environment` (else this process's).
    static func spawn(
        _ executable: String, _ arguments: [String], output: Observed<String>, ownProcessGroup: Bool = false,
        environment: [String: String]? = nil, workingDirectory: String? = nil
    ) throws -> pid_t {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ChildProcessError("pipe failed") }
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
        // None of the test process's sockets may live on in the child (a server at the other
        // end would wait for a close the test already made).
        closeInheritedDescriptors(&actions, from: 3)
        if let workingDirectory {
            guard let addChangeDirectory = Self.addChangeDirectory else {
                throw ChildProcessError("this C library cannot change a spawned program's directory")
            }
            addChangeDirectory(&actions, workingDirectory)
        }

        // The child starts with no signal blocked and default handlers: the test process
        // ignores SIGPIPE and its threads may block signals, and both would be inherited
        // (a server that never sees SIGTERM).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            flags |= POSIX_SPAWN_SETPGROUP
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for variable in envp ?? [] { free(variable) } }
        var pid: pid_t = 0
        let status = envp.map { posix_spawnp(&pid, executable, &actions, &attributes, argv, $0) }
            ?? posix_spawnp(&pid, executable, &actions, &attributes, argv, environ)
        close(writeEnd)
        guard status == 0 else {
            close(readEnd)
            throw ChildProcessError("cannot run \(executable): \(String(cString: strerror(status)))")
        }
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            // The end of a character that a read cut in two, kept for the next read: decoded
            // apart, its parts became replacement characters ("≥" read as "\u{FFFD}…").
            var pending: [UInt8] = []
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                let whole = ChildProcess.completeUTF8Prefix(pending)
                let text = String(decoding: pending[..<whole], as: UTF8.self)
                pending.removeFirst(whole)
                output.update { $0 += text }
            }
            if !pending.isEmpty {
                let text = String(decoding: pending, as: UTF8.self)
                output.update { $0 += text }
            }
            close(readEnd)
            output.update { $0 += "\n" + outputEndedMarker }
        }
        reader.start()
        return pid
    }

    /// How many of `bytes` end on a whole UTF-8 character: all of them, unless the last
    /// character's lead byte is there without all of its continuation bytes yet.
    static func completeUTF8Prefix(_ bytes: [UInt8]) -> Int {
        var continuations = 0
        var index = bytes.count
        while index > 0, continuations < 4 {
            let byte = bytes[index - 1]
            if byte & 0xC0 != 0x80 {
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1
                return continuations + 1 >= length ? bytes.count : index - 1
            }
            continuations += 1
            index -= 1
        }
        return bytes.count
    }

    /// glibc's `posix_spawn_file_actions_addchdir_np` (2.29 and later), which the Glibc module
    /// does not import: looked up by name.
    private static let addChangeDirectory: (@convention(c) (
        UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
    ) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
    }()

    /// Waits up to `timeout` for `pid` (a child of this process) to exit, reaping it; false if
    /// it still runs.
    static func reap(_ pid: pid_t, within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let result = waitpid(pid, nil, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) { return true }
            usleep(10_000)
        }
        return false
    }
}

/// A child process that could not be started.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// Loopback TCP ports for the servers the tests start.
public enum LoopbackPort {
    /// A loopback TCP port nothing uses now, below the kernel's ephemeral range: a port the
    /// kernel picks for port 0 is also a candidate source port of every outgoing connection,
    /// so another test's client could take it before the server binds it (or while it is
    /// down, before a restart on the same port).
    public static func free() throws -> UInt16 {
        let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first }
            .flatMap { Int($0) } ?? 32768
        let candidates = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<100 {
            let port = UInt16(Int.random(in: candidates))
            if isFree(port) { return port }
        }
        throw ChildProcessError("no free loopback port found below \(ephemeralStart)")
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
}
