import Foundation
import Testing
import TributaryTesting
import TestThreads

/// An upstream that answers with JSON made of tiny values, just under the default
/// `maxResponseBytes` (8 MiB): parsed into a tree, such text weighs 20 to 70 times its size
/// (`[[1],[1],…]` grew the process by 440 MiB, `[[[[]]]],…` by 520 MiB). The parser's working
/// memory is bounded (64 MiB at most for one document: `JSONWorkingMemoryTests`), so each
/// answer is a clean 502 `upstream_malformed` and the real process, read from /proc, grows by
/// that bound and the body's own copies, no more.
@Suite("Hostile upstream bodies: tiny values cannot take the process's memory")
struct HostileUpstreamBodyTests {
    /// Each shape: `unit` repeated inside `opening`…`closing`, `separator` between.
    static let shapes: [(name: String, unit: String, opening: String, closing: String, separator: String)] = [
        ("empty-arrays", "[]", "[", "]", ","),
        ("one-element-arrays", "[1]", "[", "]", ","),
        ("tiny-numbers", "1", "[", "]", ","),
        ("nested-arrays", "[[[[]]]]", "[", "]", ","),
        ("empty-objects", #""a": {}"#, "{", "}", ", "),
    ]

    static func body(_ shape: (name: String, unit: String, opening: String, closing: String, separator: String)) -> [UInt8] {
        let size = 8 * 1024 * 1024 - 16
        let count = (size - 2) / (shape.unit.utf8.count + shape.separator.utf8.count)
        return Array((shape.opening + Array(repeating: shape.unit, count: count).joined(separator: shape.separator) + shape.closing).utf8)
    }

    /// The process's peak resident memory so far (VmHWM), in bytes.
    static func peakMemory(of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "") else {
            throw TestClientError.malformed("no VmHWM in /proc/\(pid)/status")
        }
        return kilobytes * 1024
    }

    @Test("8 MiB bodies of tiny values: each answer is 502 upstream_malformed, and the process grows by less than 100 MiB",
          .disabled(if: AddressSanitizer.isActive, "ASan's quarantine holds freed memory: the bound is checked in the plain pass"),
          .ownThread)
    func tinyValues() async throws {
        let bodies = Dictionary(uniqueKeysWithValues: Self.shapes.map { ("/" + $0.name, Self.body($0)) })
        let upstream = try await ScriptedUpstream.start { request in
            UpstreamReply(headers: [("Content-Type", "application/json")], body: bodies[request.path] ?? [])
        }
        let resources = Self.shapes.map { "  \($0.name): {kind: search, upstream: hostile, path: /\($0.name), coalesce: false}" }
        let service = try await ServiceProcess(yaml: """
            server: {workers: 1}
            upstreams:
              hostile: {url: "\(upstream.baseURL)", timeout: 60s, retries: 0, circuitBreaker: {enabled: false}}
            resources:
            \(resources.joined(separator: "\n"))
            """)
        let before = try Self.peakMemory(of: service.pid)
        for shape in Self.shapes {
            let answer = try await TestHTTP.request(port: service.port, "GET", "/\(shape.name)?q=abcd", timeout: .seconds(120))
            #expect(answer.status == 502, "\(shape.name)")
            #expect(answer.error?.code == "upstream_malformed", "\(shape.name)")
            #expect(answer.error?.message.contains("needs more memory than the limit") == true, "\(shape.name): \(answer.error?.message ?? "")")
        }
        let grown = try Self.peakMemory(of: service.pid) - before
        #expect(grown < 100 * 1024 * 1024, "peak memory grew by \(grown / 1024 / 1024) MiB")
        #expect(await service.terminate() == 0)
        await upstream.shutdown()
    }
}
