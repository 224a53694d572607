public import Foundation
import Glibc
import Synchronization

/// Debian's real `nginx` in front of the service's replicas, configured by the repository's
/// own deployment template (`deploy/nginx/tributary.conf.template`), so the tests exercise
/// the file operators deploy, not a copy of it.
///
/// The template is rendered the way the official nginx image renders it (``render(_:with:)``,
/// envsubst's rules) with the replicas' loopback ports, and included by a minimal main
/// configuration of the test's own: everything nginx writes (pid file, temporary files) in a
/// directory of its own, `daemon off`, one worker, the error log (level `notice`) and the
/// template's access log (`/dev/stdout`) both read into ``output``. Started means answering:
/// ``start(replicas:template:timeout:)`` returns once nginx has started its worker (the
/// listening socket is bound before) and answered one request. Stopped by its PID.
///
/// ```swift
/// let nginx = try await NginxProcess.start(replicas: fleet.replicas.map(\.port))
/// let response = try await TestHTTP.get(port: nginx.port, "/groups")   // one of the replicas answers
/// nginx.stop()
/// ```
public final class NginxProcess: Sendable {
    public let port: UInt16
    /// The port of each listen address it chose, by the template variable that holds it
    /// (``start(replicas:template:alongside:variables:listening:timeout:)``'s `listening`).
    public let ports: [String: UInt16]
    /// Where the configuration and nginx's own files are.
    public let directory: String
    /// What nginx printed: its error log and the access log, one line per request with the
    /// replica that served it (`upstream=127.0.0.1:PORT`).
    public let output: Observed<String>
    private let pid: Mutex<pid_t?>

    private init(port: UInt16, ports: [String: UInt16], directory: String, output: Observed<String>, pid: pid_t) {
        self.port = port
        self.ports = ports
        self.directory = directory
        self.output = output
        self.pid = Mutex(pid)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The repository's deployment template, found from this file's place in the repository.
    public static var deployTemplate: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("deploy/nginx/tributary.conf.template")
    }

    /// Debian installs nginx in /usr/sbin, which a non-root `PATH` may lack.
    public static var executable: String {
        FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx"
    }

    /// The template's variables for `replicas` on loopback and nginx listening on `port`.
    public static func variables(listenPort port: UInt16, replicas: [UInt16]) -> [String: String] {
        [
            "NGINX_LISTEN": "127.0.0.1:\(port)",
            // Into ``output``, with the error log.
            "NGINX_ACCESS_LOG": "/dev/stdout",
            "NGINX_TRIBUTARY_SERVERS": replicas.map { "server 127.0.0.1:\($0);" }.joined(separator: " "),
        ]
    }

    /// A deployment template beside ``deployTemplate`` (`webhook-reload.conf.template`).
    public static func deployFile(_ name: String) -> URL {
        deployTemplate.deletingLastPathComponent().appendingPathComponent(name)
    }

    /// Starts nginx on a free loopback port in front of `replicas` (their ports) and waits
    /// until it answers. The templates `alongside` are included too, rendered with the
    /// template's variables and `given`; each variable `listening` names is a loopback
    /// address on a free port of its own (``ports``).
    public static func start(
        replicas: [UInt16], template: URL = deployTemplate, alongside: [URL] = [], variables given: [String: String] = [:],
        listening: [String] = [], timeout: Duration = .seconds(10)
    ) async throws -> NginxProcess {
        let texts = try ([template] + alongside).map { try String(contentsOf: $0, encoding: .utf8) }
        // A free port may be taken by another test before nginx binds it: then other ones.
        var attempt = 1
        while true {
            let port = try LoopbackPort.free()
            // Each its own: two servers on one port would share it, the first answering for both.
            var ports: [String: UInt16] = [:]
            for name in listening {
                var free = try LoopbackPort.free()
                while free == port || ports.values.contains(free) { free = try LoopbackPort.free() }
                ports[name] = free
            }
            let directory = try makeDirectory()
            let all = variables(listenPort: port, replicas: replicas).merging(given) { $1 }
                .merging(ports.mapValues { "127.0.0.1:\($0)" }) { $1 }
            var included: [String] = []
            for (index, text) in texts.enumerated() {
                let path = directory + (index == 0 ? "/tributary.conf" : "/alongside-\(index).conf")
                try render(text, with: all).write(toFile: path, atomically: true, encoding: .utf8)
                included.append(path)
            }
            try mainConfiguration(directory: directory, including: included)
                .write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
            let output = Observed("")
            let pid = try ChildProcess.spawn(
                executable, [executable, "-p", directory + "/", "-c", directory + "/nginx.conf", "-e", "stderr"],
                output: output, ownProcessGroup: true)
            let nginx = NginxProcess(port: port, ports: ports, directory: directory, output: output, pid: pid)
            let started = await output.wait(timeout: timeout) {
                $0.contains("start worker process") || $0.contains(ChildProcess.outputEndedMarker)
            }
            if started && !output.value.contains(ChildProcess.outputEndedMarker) {
                // Any answer will do: nginx accepts, reads and proxies (a 502 would be nginx's).
                _ = try await TestHTTP.get(port: port, "/healthz")
                return nginx
            }
            nginx.stop()
            if output.value.contains("Address already in use") && attempt < 3 {
                attempt += 1
                continue
            }
            throw ChildProcessError("nginx on port \(port) did not start:\n\(output.value)")
        }
    }

    /// Stops nginx: SIGTERM to the master (a fast shutdown: it stops its worker and exits),
    /// then SIGKILL to its whole process group if it has not exited within 5 s. Idempotent.
    public func stop() {
        guard let pid = pid.withLock({ pid in defer { pid = nil }; return pid }) else { return }
        kill(pid, SIGTERM)
        if !ChildProcess.reap(pid, within: .seconds(5)) {
            kill(-pid, SIGKILL)
            waitpid(pid, nil, 0)
        }
    }

    /// The port of the replica that served each request whose access log line contains
    /// `text` (e.g. `"POST /streams/"`), in order, from nginx's output so far.
    public func servingPorts(ofRequestsContaining text: String) -> [UInt16] {
        Self.servingPorts(in: output.value, ofRequestsContaining: text)
    }

    /// ``servingPorts(ofRequestsContaining:)`` in an output `log`: for conditions given to
    /// ``output``'s `wait`, which must not read `output` again.
    public static func servingPorts(in log: String, ofRequestsContaining text: String) -> [UInt16] {
        log.split(separator: "\n").filter { $0.contains(text) }.compactMap { line in
            line.firstMatch(of: /upstream=127\.0\.0\.1:(\d+)/).flatMap { UInt16($0.1) }
        }
    }

    // MARK: - Configuration

    /// Renders an nginx template as the official image does with envsubst: `${NAME}` and
    /// `$NAME` of each variable given are replaced, everything else (nginx's own `$host`…)
    /// is kept. Throws when the template uses a `${NAME}` that is not given: the image would
    /// leave it for nginx, which then fails on it.
    public static func render(_ template: String, with variables: [String: String]) throws -> String {
        let missing = Set(placeholders(in: template)).subtracting(variables.keys)
        guard missing.isEmpty else {
            throw ChildProcessError("the template uses \(missing.sorted().map { "${\($0)}" }.joined(separator: ", ")), which is not given")
        }
        var text = template
        // Longer names first: $NGINX_LISTEN_PORT must not be taken for $NGINX_LISTEN plus text.
        for (name, value) in variables.sorted(by: { $0.key.count > $1.key.count }) {
            text = text.replacingOccurrences(of: "${\(name)}", with: value)
            let bare = try Regex("\\$" + name + "(?![A-Za-z0-9_])")
            text = text.replacing(bare) { _ in value }
        }
        return text
    }

    /// The names of the template's `${NAME}` placeholders, in order of first use.
    public static func placeholders(in template: String) -> [String] {
        var names: [String] = []
        for match in template.matches(of: /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/) where !names.contains(String(match.1)) {
            names.append(String(match.1))
        }
        return names
    }

    /// A main configuration around the rendered server (`http`-level include), with every
    /// file nginx writes in `directory`: what the official image's nginx.conf is to its
    /// conf.d, minus the paths under /var.
    public static func mainConfiguration(directory: String, including server: String) -> String {
        mainConfiguration(directory: directory, including: [server])
    }

    /// ``mainConfiguration(directory:including:)`` including each of `servers`, in order.
    public static func mainConfiguration(directory: String, including servers: [String]) -> String {
        """
        daemon off;
        worker_processes 1;
        pid "\(directory)/nginx.pid";
        error_log stderr notice;
        events { worker_connections 1024; }
        http {
            client_body_temp_path "\(directory)/client_body";
            proxy_temp_path "\(directory)/proxy";
            fastcgi_temp_path "\(directory)/fastcgi";
            uwsgi_temp_path "\(directory)/uwsgi";
            scgi_temp_path "\(directory)/scgi";
        \(servers.map { "    include \"\($0)\";" }.joined(separator: "\n"))
        }

        """
    }

    /// Runs `nginx -t` on a main configuration file: nginx's own verdict and what it said.
    public static func check(configuration path: String, prefix: String) async -> (passed: Bool, output: String) {
        let output = Observed("")
        guard let pid = try? ChildProcess.spawn(executable, [executable, "-t", "-p", prefix + "/", "-c", path, "-e", "stderr"], output: output)
        else { return (false, "cannot run \(executable)") }
        _ = await output.wait(timeout: .seconds(10)) { $0.contains(ChildProcess.outputEndedMarker) }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return (status == 0, output.value)
    }

    /// A new directory for nginx's files that its worker (which drops root for `nobody`)
    /// can enter; the caller removes it.
    public static func makeDirectory() throws -> String {
        var template = Array("/tmp/tributary-nginx-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw ChildProcessError("mkdtemp failed: \(String(cString: strerror(errno)))") }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(path, 0o755)
        return path
    }
}
