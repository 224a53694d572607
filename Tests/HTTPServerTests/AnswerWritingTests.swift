import HTTPCore
import Foundation
@testable import HTTPServer
import Testing
import TributaryTesting
import TestThreads

/// How a complete answer leaves the server: written to a plain socket by the call that makes
/// it (no write event and loop turn in between), and whatever the socket cannot take at once
/// left to evhttp's write event, which finishes it; either way evhttp then serves the
/// connection's next request.
@Suite("Answer writing")
struct AnswerWritingTests {
    @Test("a complete answer is in the socket when respond returns, and the connection serves its next request")
    func writtenAtOnce() async throws {
        let leftInBuffer = Observed<[Int]>([])
        let server = try await TestServer.start { request, _ in
            request.respond(status: 200, json: JSONWriter.object([("path", request.path)]))
            let pending = request.connection.pendingOutputBytes
            leftInBuffer.update { $0.append(pending) }
        }
        let connection = try await TestConnection(port: server.port)
        for index in 0..<3 {
            try await connection.sendRequest("GET", "/item/\(index)")
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(response.text == #"{"path":"/item/\#(index)"}"#)
        }
        // The handler notes what was left after `respond` returned, which can be after the
        // client has read the answer already sent.
        #expect(await leftInBuffer.wait(timeout: .seconds(10)) { $0.count == 3 })
        #expect(leftInBuffer.value == [0, 0, 0], "nothing left for a write event")
        await server.stop()
    }

    @Test("an answer bigger than the socket takes is finished by the write event, intact, and keep-alive goes on", .ownThread)
    func finishedByTheLoop() async throws {
        let big = (0..<(8 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let leftInBuffer = Observed<[Int]>([])
        let server = try await TestServer.start { request, _ in
            if request.path == "/big" {
                request.respond(status: 200, body: big)
            } else {
                request.respond(status: 200, text: "small")
            }
            let pending = request.connection.pendingOutputBytes
            leftInBuffer.update { $0.append(pending) }
        }
        let connection = try await TestConnection(port: server.port, receiveBuffer: 64 * 1024)
        try await connection.sendRequest("GET", "/big")
        let response = try await connection.readResponse()
        #expect(response.status == 200)
        #expect(response.body == big)
        try await connection.sendRequest("GET", "/after")
        #expect(try await connection.readResponse().text == "small")
        // (The small answer may find the socket still full of the big one's unacknowledged
        // bytes and go the same way: no expectation on it.)
        #expect(await leftInBuffer.wait(timeout: .seconds(10)) { $0.count == 2 })
        #expect(leftInBuffer.value.first.map { $0 > 0 } == true, "left in the buffer: \(leftInBuffer.value)")
        await server.stop()
    }

    @Test("every answer has one Date, an IMF-fixdate of the second it was made")
    func date() async throws {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")  // RFC 9110's example
        #expect(HTTPDate.format(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
        let server = try await TestServer.start { request, _ in
            request.path == "/unchanged" ? request.respondNotModified(headers: []) : request.respond(status: 200, text: "body")
        }
        let parser = DateFormatter()
        parser.locale = Locale(identifier: "en_US_POSIX")
        parser.timeZone = TimeZone(identifier: "GMT")
        parser.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let connection = try await TestConnection(port: server.port)
        // The seconds around each request, read from the clock the server reads, time(2):
        // Linux serves it from the coarse clock, up to a tick behind gettimeofday's, so in the
        // first milliseconds of a second Date() has moved on while the answer's second has not.
        for path in ["/", "/unchanged", "/"] {
            let before = Double(time(nil))
            try await connection.sendRequest("GET", path)
            let response = try await connection.readResponse()
            let after = Double(time(nil))
            let dates = response.headers.filter { $0.0.lowercased() == "date" }.map(\.1)
            #expect(dates.count == 1, "\(response.headers)")
            let date = try #require(dates.first.flatMap { parser.date(from: $0) }, "\(dates)")
            #expect(date.timeIntervalSince1970 >= before && date.timeIntervalSince1970 <= after)
        }
        await server.stop()
    }

    @Test("HEAD, 304 and Connection: close answers written at once end as evhttp would end them")
    func otherEndings() async throws {
        let server = try await TestServer.start { request, _ in
            switch request.path {
            case "/unchanged": request.respondNotModified(headers: [("ETag", "\"v1\"")])
            default: request.respond(status: 200, text: "body")
            }
        }
        let connection = try await TestConnection(port: server.port)
        try await connection.sendRequest("HEAD", "/")
        let head = try await connection.readResponse(method: "HEAD")
        #expect(head.status == 200 && head.header("Content-Length") == "4" && head.body.isEmpty)
        try await connection.sendRequest("GET", "/unchanged")
        #expect(try await connection.readResponse().status == 304)
        try await connection.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(try await connection.readResponse().text == "body")
        #expect(await connection.waitForClose(within: .seconds(10)), "closed after the answer it announced as the last")
        await server.stop()
    }
}
