import Foundation
import TributaryTesting

/// The `tributary` binary of this build, run as a child process with a configuration file of
/// its own, its standard error collected (the access log), its port read from its log.
final class ServiceProcess: Sendable {
    let port: UInt16
    let output: Observed<String>
    private let process: Process
    private let directory: URL

    /// The binary next to the test bundle (`swift build` puts both in the same directory).
    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tributary")
    }

    /// `openFileLimit` runs it under `prlimit --nofile=N:N` (soft and hard: the service raises
    /// its soft limit to the hard one at start).
    init(
        yaml: String, command: String = "serve", arguments: [String] = [], environment: [String: String] = [:],
        openFileLimit: Int? = nil
    ) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("tributary.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        process = Process()
        let serviceArguments = [command, "--config", config.path, "--listen", "127.0.0.1:0"] + arguments
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
        errors.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { output.update { $0 += String(decoding: data, as: UTF8.self) } }
        }
        try process.run()
        guard await output.wait(timeout: .seconds(20), until: { $0.contains(" listening") }),
              let match = output.value.firstMatch(of: /address=127\.0\.0\.1:(\d+)/), let port = UInt16(match.1) else {
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

    /// Sends SIGTERM and waits for the exit; returns the exit status.
    func terminate() async -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        return await exitStatus()
    }

    /// Waits (on a thread of its own) for the process to exit.
    func exitStatus() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { [process] in
                process.waitUntilExit()
                continuation.resume(returning: process.terminationStatus)
            }
        }
    }

    deinit {
        if process.isRunning { process.terminate() }
        try? FileManager.default.removeItem(at: directory)
    }
}
