import Foundation
import Glibc
import Testing
import TributaryConfiguration
import TributaryServer
import TributaryTesting

@Suite("A first run: the configuration built into the binary, and the files that win over it")
struct ShippedConfigurationTests {
    /// One list resource named `name` over the tasks upstream (which `demo` points at itself).
    static func yaml(resource name: String) -> String {
        """
        server:
          workers: 1
        upstreams:
          tasks: {url: "http://127.0.0.1:9", timeout: 5s}
        resources:
          \(name):
            kind: list
            upstream: tasks
            list: {path: /groups, items: result, id: id}
            details: {path: "/groups/{id}/metadata", value: result}
        """
    }

    @Test("the binary carries config/tributary.yaml as it was built")
    func embeddedIsTheFile() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../config/tributary.yaml")
        #expect(ShippedConfiguration.yaml == (try String(contentsOf: file, encoding: .utf8)))
    }

    @Test("`tributary demo` in a directory with no configuration serves the shipped resources, and says what to open")
    func demoFromAnEmptyDirectory() async throws {
        let service = try await ServiceProcess(yaml: nil, command: "demo", arguments: ["--workers", "1"])
        let groups = try await TestHTTP.get(port: service.port, "/groups")
        #expect(groups.status == 200)
        let names = (try groups.json() as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names?.first == "Inbox", "the demo upstream's groups: \(groups.text)")
        #expect(try await TestHTTP.get(port: service.port, "/rows").status == 200)
        #expect(try await TestHTTP.get(port: service.port, "/search?q=swift").status == 200)
        #expect(service.output.value.contains("source=built-in config/tributary.yaml"))
        #expect(service.output.value.contains("open http://127.0.0.1:\(service.port)/ in a browser"))
        #expect(await service.terminate() == 0)
    }

    @Test("config/tributary.yaml in the working directory wins over the built-in one, TRIBUTARY_CONFIG over it, --config over both")
    func filesWin() async throws {
        let files = [
            "config/tributary.yaml": Self.yaml(resource: "fromdirectory"),
            "environment.yaml": Self.yaml(resource: "fromenvironment"),
            "option.yaml": Self.yaml(resource: "fromoption"),
        ]
        let runs: [(environment: [String: String], arguments: [String], served: String)] = [
            ([:], [], "fromdirectory"),
            (["TRIBUTARY_CONFIG": "environment.yaml"], [], "fromenvironment"),
            (["TRIBUTARY_CONFIG": "environment.yaml"], ["--config", "option.yaml"], "fromoption"),
        ]
        for run in runs {
            let service = try await ServiceProcess(
                yaml: nil, files: files, command: "demo", arguments: run.arguments, environment: run.environment)
            for name in ["groups", "fromdirectory", "fromenvironment", "fromoption"] {
                let status = try await TestHTTP.get(port: service.port, "/\(name)").status
                #expect(status == (name == run.served ? 200 : 404), "/\(name) with \(run.environment) \(run.arguments)")
            }
            #expect(await service.terminate() == 0)
        }
    }

    @Test("a file named by TRIBUTARY_CONFIG or --config must exist: no falling back to the built-in one")
    func namedFileMustExist() async throws {
        for (environment, arguments) in [(["TRIBUTARY_CONFIG": "missing.yaml"], [String]()), ([:], ["--config", "missing.yaml"])] {
            let (status, output) = try await Self.runToExit(["demo", "--listen", "127.0.0.1:0"] + arguments, environment: environment)
            #expect(status != 0)
            #expect(output.contains("missing.yaml: cannot read the configuration file"), "\(output)")
        }
    }

    /// Runs the binary in an empty temporary directory until it exits: its status and output.
    private static func runToExit(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tributary-exit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try SpawnedProcess(
            ServiceProcess.binary.path, arguments,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TRIBUTARY_") }.merging(environment) { $1 },
            directory: directory.path)
        let status = await process.exitStatus()
        return (status, process.output.value)
    }
}
