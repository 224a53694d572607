import Foundation
import Glibc
import Logging
import Testing
@testable import TributaryServer
import TributaryTesting

@Suite("server.logFormat: json: every log line one JSON object, a request's with its trace and span ids")
struct JSONLogTests {
    /// Each line of `text` as a JSON object (nil for a line that is not one).
    static func objects(_ text: some StringProtocol) -> [(line: String, object: [String: Any]?)] {
        text.split(separator: "\n").map { line in
            (String(line), (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])
        }
    }

    /// RFC 3339 in UTC with milliseconds, as the handler writes it.
    static func isTime(_ text: String) -> Bool {
        text.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil
    }

    @Test("the process at debug level: every line it writes is an object with time, level and message; the access line has the request's trace id, a span id of its own and no secret")
    func process() async throws {
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0)! }
        let yaml = ProcessTests.yaml(upstream: upstream.baseURL).replacing("server:\n", with: "server:\n  logFormat: json\n  logLevel: debug\n")
        let service = try await ServiceProcess(yaml: yaml)
        let traceparent = "00-\(TraceContextTests.incomingTraceID)-00f067aa0ba902b7-01"
        let answer = try await TestHTTP.get(port: service.port, "/groups?access_token=SECRET-1", headers: [("traceparent", traceparent)])
        #expect(answer.status == 200)
        #expect(try await TestHTTP.get(port: service.port, "/nowhere").status == 404)
        #expect(await service.terminate() == 0)

        // Standard output and error together: the service writes only its log, on standard error.
        let lines = Self.objects(service.output.value).filter { $0.line != "[output ended]" }
        #expect(lines.count >= 5, "configuration, listening, ready, two access lines, stopping…: \(service.output.value)")
        for (line, object) in lines {
            let object = try #require(object, "not a JSON object: \(line)")
            #expect(Self.isTime(object["time"] as? String ?? ""), "\(line)")
            #expect(Logger.Level(rawValue: object["level"] as? String ?? "") != nil, "\(line)")
            #expect(object["message"] is String, "\(line)")
            #expect(object["logger"] as? String == "tributary", "\(line)")
        }
        let access = try #require(lines.compactMap(\.object).first { ($0["message"] as? String)?.hasPrefix("GET /groups?") == true })
        #expect(access["message"] as? String == "GET /groups?access_token=… 200 \((access["message"] as? String)?.split(separator: " ").last ?? "")")
        #expect(access["level"] as? String == "info")
        #expect(access["route"] as? String == "/groups")
        #expect(access["trace_id"] as? String == TraceContextTests.incomingTraceID)
        let spanID = try #require(access["span_id"] as? String)
        #expect(spanID.utf8.count == 16 && spanID.allSatisfy { $0.isHexDigit && !$0.isUppercase } && spanID != "0000000000000000")
        #expect(spanID != "00f067aa0ba902b7", "the service's own span, not the caller's")
        let other = try #require(lines.compactMap(\.object).first { ($0["message"] as? String)?.hasPrefix("GET /nowhere ") == true })
        #expect(other["trace_id"] as? String != TraceContextTests.incomingTraceID)
        #expect(other["span_id"] as? String != spanID)
        #expect(!service.output.value.contains("SECRET"))
        #expect(upstream.requests.allSatisfy { $0.header("traceparent")?.contains(spanID) == false },
                "an upstream call is a span of its own")
        await upstream.shutdown()
    }

    /// What `log` writes through a ``JSONLogHandler``, from a file it appends to.
    static func written(by log: (Logger) -> Void, metadata: Logger.Metadata = [:]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("json-log-\(UUID().uuidString)").path
        let file = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        try #require(file >= 0)
        defer { unlink(path) }
        var logger = Logger(label: "test") { JSONLogHandler(label: $0, fileDescriptor: file, metadataProvider: nil) }
        logger.logLevel = .trace
        for (key, value) in metadata { logger[metadataKey: key] = value }
        log(logger)
        close(file)
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String { "it broke" }
    }

    @Test("what a line holds: escaped text on one line, nested metadata, the logger's own, a clashing key renamed, an error")
    func members() throws {
        let text = try Self.written(by: { logger in
            logger.warning("a \"quoted\"\nline\u{2028}with\ttabs", metadata: [
                "nested": ["list": ["a", "\(1)"], "name": "x"], "message": "mine", "count": .stringConvertible(42),
            ])
            logger.error("failed", error: Failure())
        }, metadata: ["replica": "r1"])
        #expect(text.hasSuffix("}\n") && text.split(separator: "\n").count == 2, "\(text)")
        #expect(!text.contains("\u{2028}"), "U+2028 is escaped as every JSON text the service writes")
        let objects = Self.objects(text).compactMap(\.object)
        try #require(objects.count == 2, "\(text)")
        #expect(objects[0]["message"] as? String == "a \"quoted\"\nline\u{2028}with\ttabs")
        #expect(objects[0]["level"] as? String == "warning")
        #expect(objects[0]["logger"] as? String == "test")
        #expect(objects[0]["metadata.message"] as? String == "mine")
        #expect(objects[0]["count"] as? String == "42")
        #expect(objects[0]["replica"] as? String == "r1")
        let nested = try #require(objects[0]["nested"] as? [String: Any])
        #expect(nested["list"] as? [String] == ["a", "1"])
        #expect(nested["name"] as? String == "x")
        #expect(objects[1]["error.message"] as? String == "it broke")
        #expect((objects[1]["error.type"] as? String)?.hasSuffix("Failure") == true)
        #expect(objects[1]["replica"] as? String == "r1")
    }

    @Test("lines from many threads at once are whole lines, one object each", .ownThread)
    func threads() throws {
        let (threads, perThread) = (8, 500)
        let padding = String(repeating: "x", count: 300)
        let text = try Self.written { logger in
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for index in 0..<perThread {
                    logger.info("\(padding)", metadata: ["thread": "\(thread)", "index": "\(index)"])
                }
            }
        }
        let objects = Self.objects(text)
        #expect(objects.count == threads * perThread)
        #expect(objects.allSatisfy { $0.object?["message"] as? String == padding })
        #expect(Set(objects.compactMap { "\($0.object?["thread"] ?? "")/\($0.object?["index"] ?? "")" }).count == threads * perThread)
    }
}
