import Foundation
import Glibc
import TributaryTesting

/// The `tributary` binary of this build, run as a child process in a directory of its own
/// with a configuration file of its own, its output collected (the access log), its port
/// read from its log.
final class ServiceProcess: Sendable {
    let port: UInt16
    /// What it writes (the access log and its other log lines).
    var output: Observed<String> { process.output }
    private let process: SpawnedProcess
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
        let serviceArguments = [command] + configArguments + ["--listen", "127.0.0.1:0"] + arguments
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TRIBUTARY_") }.merging(environment) { $1 }
        let (binary, directory) = (Self.binary.path, directory.path)
        // prlimit execs the service, so the PID is the service's own.
        process = try openFileLimit.map {
            try SpawnedProcess("/usr/bin/prlimit", ["--nofile=\($0):\($0)", "--", binary] + serviceArguments,
                               environment: environment, directory: directory)
        } ?? SpawnedProcess(binary, serviceArguments, environment: environment, directory: directory)
        let output = process.output
        guard await output.wait(timeout: .seconds(20), until: { Self.listeningPort(in: $0) != nil }),
              let port = Self.listeningPort(in: output.value) else {
            process.signal(SIGKILL)
            throw TestClientError.malformed("the service did not start: \(output.value)")
        }
        self.port = port
    }

    /// The port of the service's own `listening` line, not the demo upstream's (`demo
    /// upstream listening`, first); in either log format.
    static func listeningPort(in output: String) -> UInt16? {
        if let match = output.firstMatch(of: /address=127\.0\.0\.1:(\d+) workers=/) { return UInt16(match.1) }
        // server.logFormat: json, its metadata in any order.
        for line in output.split(separator: "\n") where line.contains(#""message":"listening""#) {
            if let match = line.firstMatch(of: /"address":"127\.0\.0\.1:(\d+)"/) { return UInt16(match.1) }
        }
        return nil
    }

    /// The process id.
    var pid: Int32 { process.pid }

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
        process.signal(SIGHUP)
    }

    /// How many times its log says `line` so far.
    func count(_ line: String) -> Int {
        output.value.components(separatedBy: line).count - 1
    }

    /// SIGKILL: the process dies at once, without its shutdown.
    func kill() {
        process.signal(SIGKILL)
    }

    /// Sends SIGTERM and waits for the exit; returns the exit status.
    func terminate() async -> Int32 {
        process.signal(SIGTERM)
        return await exitStatus()
    }

    /// Waits for the process to exit, then until `output` holds all it wrote: tests check its
    /// log right after.
    func exitStatus() async -> Int32 {
        await process.exitStatus()
    }

    deinit {
        process.signal(SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }
}
