import Foundation
import Glibc
import TributaryTesting

/// The `tributary` binary of this build, run as a child process in a directory of its own
/// with a configuration file of its own, its standard error collected (the access log), its
/// port read from its log.
final class ServiceProcess: Sendable {
    let port: UInt16
    let output: Observed<String>
    /// Appends what the process writes to its standard error to `output`.
    private let outputReader: Task<Void, Never>
    private let process: Process
    private let directory: URL
    /// The `--config` file, when it was given one.
    private let configFile: URL?

    /// The binary next to the test bundle (`swift build` puts both in the same directory).
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tributary")
    }

    /// Runs `tributary <command> --config <its directory>/tributary.yaml` holding `yaml`, or
    /// with no `--config` when `yaml` is nil; `files` are written into its directory first
    /// (paths relative to it, e.g. `config/tributary.yaml`), which is its working directory.
    /// `openFileLimit` runs it under `prlimit --nofile=N:N` (soft and hard: the service raises
    /// its soft limit to the hard one at start).
    init(
        yaml: String?, files: [String: String] = [:], command: String = "serve", arguments: [String] = [],
        environment: [String: String] = [:], openFileLimit: Int? = nil
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (path, text) in files {
            let file = directory.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        var configArguments: [String] = []
        configFile = yaml == nil ? nil : directory.appendingPathComponent("tributary.yaml")
        if let yaml, let configFile {
            try yaml.write(to: configFile, atomically: true, encoding: .utf8)
            configArguments = ["--config", configFile.path]
        }
        process = Process()
        process.currentDirectoryURL = directory
        let serviceArguments = [command] + configArguments + ["--listen", "127.0.0.1:0"] + arguments
        if let openFileLimit {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            process.arguments = ["--nofile=\(openFileLimit):\(openFileLimit)", "--", Self.binary.path] + serviceArguments
        } else {
            process.executableURL = Self.binary
            process.arguments = serviceArguments
        }
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TRIBUTARY_") }.merging(environment) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        let output = Observed("")
        self.output = output
        try process.run()
        outputReader = Task { [reading = errors.fileHandleForReading] in await Self.collect(reading, into: output) }
        // The service's own line, not the demo upstream's (`demo upstream listening`, first).
        guard await output.wait(timeout: .seconds(20), until: { $0.contains(/address=127\.0\.0\.1:\d+ workers=/) }),
              let match = output.value.firstMatch(of: /address=127\.0\.0\.1:(\d+) workers=/), let port = UInt16(match.1) else {
            process.terminate()
            throw TestClientError.malformed("the service did not start: \(output.value)")
        }
        self.port = port
    }

    /// The process id (prlimit execs the service, so it is the service's own).
    var pid: Int32 { process.processIdentifier }

    /// CPU time the process has used so far (user and system), from /proc.
    var cpuTime: Duration {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ")?.upperBound else { return .zero }
        let fields = stat[afterName...].split(separator: " ")
        let ticks = (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
        return .milliseconds(ticks * 1000 / Int(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// Whether the process is still running.
    var isRunning: Bool { process.isRunning }

    /// Replaces its configuration file with `yaml` (atomically: a reload reads all or nothing
    /// of it) and sends SIGHUP, which reloads it.
    func reload(_ yaml: String) throws {
        try yaml.write(to: configFile!, atomically: true, encoding: .utf8)
        Glibc.kill(process.processIdentifier, SIGHUP)
    }

    /// How many times its log says `line` so far.
    func count(_ line: String) -> Int {
        output.value.components(separatedBy: line).count - 1
    }

    /// SIGKILL: the process dies at once, without its shutdown.
    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status.
    func terminate() async -> Int32 {
        Glibc.kill(process.processIdentifier, SIGTERM)
        return await exitStatus()
    }

    /// Waits (on a thread of its own) for the process to exit, then until `output` holds all it
    /// wrote: tests check its log right after.
    func exitStatus() async -> Int32 {
        let status = await withCheckedContinuation { continuation in
            Thread.detachNewThread { [process] in
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
        // Everything it wrote is in the pipe now: the reader takes what is left and stops.
        outputReader.cancel()
        await outputReader.value
        return status
    }

    /// Reads `handle` (non-blocking, waiting through ``Poller``) into `output` until the pipe
    /// ends, or until cancelled and what is still in it is read. Not Foundation's
    /// `readabilityHandler`: it runs on a queue of its own, so under load the exit was seen
    /// before the last lines were read, and nothing tells when they have been.
    private static func collect(_ handle: FileHandle, into output: Observed<String>) async {
        defer { withExtendedLifetime(handle) {} }
        let fd = handle.fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count > 0 {
                output.update { $0 += String(decoding: buffer[..<count], as: UTF8.self) }
            } else if count == 0 || errno != EAGAIN || Task.isCancelled {
                return
            } else {
                // No deadline of its own: the pipe ends when the process does, and deinit ends it.
                _ = try? await Poller.shared.wait(for: .readable, on: fd, until: .now + .seconds(60))
            }
        }
    }

    deinit {
        outputReader.cancel()
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }
}
