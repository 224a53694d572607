import Foundation
import Glibc

/// A throwaway certificate authority and a server certificate for `localhost` and
/// `127.0.0.1`, made with the `openssl` command in a temporary directory, for HTTPS tests.
public struct TestCertificates: Sendable {
    public let directory: String
    public var caFile: String { directory + "/ca.pem" }
    public var serverChainFile: String { directory + "/server.pem" }
    public var serverKeyFile: String { directory + "/server.key" }

    /// Makes a CA named `authorityName` and a server certificate signed by it, valid for
    /// `subjectAltNames` (OpenSSL syntax).
    public static func make(
        authorityName: String = "Tributary Test CA", subjectAltNames: String = "DNS:localhost,IP:127.0.0.1"
    ) async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("tributary-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let certificates = TestCertificates(directory: directory)
        try "subjectAltName=\(subjectAltNames)\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try await openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=\(authorityName)",
                          "-keyout", directory + "/ca.key", "-out", certificates.caFile)
        try await openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
                          "-keyout", certificates.serverKeyFile, "-out", directory + "/server.csr")
        try await openssl("x509", "-req", "-in", directory + "/server.csr", "-CA", certificates.caFile, "-CAkey", directory + "/ca.key",
                          "-CAcreateserial", "-days", "2", "-extfile", directory + "/san.ext", "-out", certificates.serverChainFile)
        return certificates
    }

    /// Deletes the files.
    public func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `openssl` with posix_spawn (Foundation's `Process` leaks a little on Linux, which
    /// the AddressSanitizer run would report), and waits for it on a thread of its own: making
    /// an RSA key takes a second or more on a busy machine, too long to hold a thread of the
    /// cooperative pool.
    private static func openssl(_ arguments: String...) async throws {
        let argv = (["openssl"] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        closeInheritedDescriptors(&actions, from: 3)
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, "openssl", &actions, nil, argv, environ)
        guard spawned == 0 else { throw TestClientError.system("posix_spawnp openssl", spawned) }
        let status = await withCheckedContinuation { continuation in
            Thread.detachNewThread { [pid] in
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
        guard status == 0 else {
            throw TestClientError.malformed("openssl \(arguments.joined(separator: " ")) exited with status \(status)")
        }
    }
}
