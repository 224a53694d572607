import Crypto
import Foundation
import Testing
@testable import TributaryServer
import TributaryTesting

/// "Numbers from outside never crash it" (DESIGN.md, part 3): a token's `exp` and `nbf`, a
/// client's numeric headers, an upstream's, a rate-limit state read from Redis, each fed 0,
/// −1, 2^53, 2^63, 2^64, 1e308, and what is not a number, over real sockets. A trap would end
/// the test process itself; each test also checks that the service still answers after.
@Suite("Hostile numbers: tokens, headers, upstream answers and Redis replies at the extremes")
struct HostileNumbersTests {
    /// The numbers, as JSON writes them (and what is not one).
    static let numbers = ["0", "-1", "9007199254740992", "9223372036854775808", "18446744073709551616", "1e308", "-1e308", "1e999",
                          "253402300799", #""253402300799""#, "null", "true", #""text""#]

    /// An HS256 token over `payload` exactly as written (a JSON encoder would not write
    /// `1e999`), signed with the tests' secret.
    static func token(payload: String) -> String {
        let header = TestTokens.base64URL(Array(#"{"alg":"HS256","kid":"hs","typ":"JWT"}"#.utf8))
        let body = TestTokens.base64URL(Array(payload.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Array("\(header).\(body)".utf8), using: SymmetricKey(data: Array(TestTokens.secret.utf8)))
        return "\(header).\(body).\(TestTokens.base64URL(Array(signature)))"
    }

    static func claims(exp: String, nbf: String? = nil) -> String {
        #"{"sub":"alice","iss":"\#(TestTokens.issuer)","aud":"\#(TestTokens.audience)","exp":\#(exp)"#
            + (nbf.map { #","nbf":\#($0)"# } ?? "") + "}"
    }

    /// Whether a token whose `exp` is `text` should be accepted now: a number in the future.
    static func isFuture(_ text: String) -> Bool {
        guard let value = Double(text), value.isFinite else { return false }
        return value > Date().timeIntervalSince1970
    }

    @Test("a token's exp at any extreme answers 200 or 401, never a trap; a far-future token's stream lives on and refreshes")
    func tokenExpiry() async throws {
        let world = try await AuthTests.World.start(groupsAuth: "auth: {required: true}")
        for exp in Self.numbers {
            let token = Self.token(payload: Self.claims(exp: exp))
            let answer = try await world.service.get("/groups", headers: TestTokens.bearer(token))
            #expect(answer.status == (Self.isFuture(exp) ? 200 : 401), "exp \(exp)")
            let stream = try await world.service.events("/groups", headers: TestTokens.bearer(token))
            #expect(stream.head.status == (Self.isFuture(exp) ? 200 : 401), "exp \(exp)")
            if stream.head.status == 200 {
                let id = try #require(ConfigurationReloadTests.streamID(try await stream.next(type: "stream")))
                _ = try await stream.next(type: "snapshot")
                // Alive and not ended: a change reaches it as a snapshot, not token_expired.
                world.fixture.update { $0.groups[0].taskCount += 1 }
                let reload = try await TestHTTP.request(
                    port: world.service.port, "POST", "/streams/\(id)/triggers/reload", headers: TestTokens.bearer(token))
                #expect(reload.status == 202, "exp \(exp)")
                let next = try await stream.next()
                #expect(next.type == "snapshot" && next.data == world.fixture.value.mergedJSON, "exp \(exp): \(next)")
            }
            stream.close()
        }
        #expect(try await world.service.get("/healthz").status == 200)
        await world.stop()
    }

    @Test("a token's nbf at any extreme is 200 or 401, never a trap")
    func tokenNotBefore() async throws {
        let world = try await AuthTests.World.start(groupsAuth: "auth: {required: true}")
        let exp = String(Int(Date().timeIntervalSince1970) + 600)
        for nbf in Self.numbers {
            let answer = try await world.service.get("/groups", headers: TestTokens.bearer(Self.token(payload: Self.claims(exp: exp, nbf: nbf))))
            let notYet = Double(nbf).map { !$0.isFinite || $0 > Date().timeIntervalSince1970 } ?? (nbf != "null")
            #expect(answer.status == (notYet ? 401 : 200), "nbf \(nbf)")
        }
        #expect(try await world.service.get("/healthz").status == 200)
        await world.stop()
    }

    @Test("a client's numeric headers at any extreme are answered, never a trap: Last-Event-ID, traceparent, Accept's q, Content-Length")
    func clientHeaders() async throws {
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { fixture.value.reply(to: $0)! }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let values = Self.numbers.map { $0.replacingOccurrences(of: "\"", with: "") } + ["nan", "inf", "-inf", "0x7fffffffffffffff"]
        for value in values {
            let headers = [
                ("Last-Event-ID", value), ("Accept", "application/json;q=\(value)"),
                ("traceparent", "00-\(String(repeating: "f", count: 32))-\(String(repeating: "f", count: 16))-\(value)"),
                ("If-None-Match", "\"\(value)\""), ("X-Forwarded-For", value),
            ]
            let answer = try await service.get("/groups", headers: headers)
            #expect([200, 304].contains(answer.status), "\(value): \(answer.status)")
            let stream = try await service.events("/groups", headers: [("Last-Event-ID", value)])
            #expect(stream.head.status == 200, "Last-Event-ID \(value)")
            #expect(try await stream.next(type: "snapshot").data == fixture.value.mergedJSON, "Last-Event-ID \(value)")
            stream.close()
            // A weight that is not a number counts as 1, and one past 0…1 is clamped: a
            // stream (`q` above 0) or JSON (0), whatever the number.
            let weighed = try await TestConnection(port: service.port)
            try await weighed.sendRequest("GET", "/groups", headers: [("Accept", "text/event-stream;q=\(value)")])
            let head = try await weighed.readHead()
            let streams = Double(value).map { $0.isNaN || $0 > 0 } ?? true
            #expect(head.status == 200 && head.header("Content-Type")?.hasPrefix(streams ? "text/event-stream" : "application/json") == true,
                    "Accept: text/event-stream;q=\(value)")
            weighed.close()
            let connection = try await TestConnection(port: service.port)
            try await connection.send("PUT /streams/0123456789abcdef0123456789abcdef/inputs/q HTTP/1.1\r\nHost: t\r\nContent-Length: \(value)\r\n\r\n")
            let refused = try? await connection.readResponse()
            #expect(refused.map { (400...499).contains($0.status) } ?? connection.peerClosed, "Content-Length \(value)")
            connection.close()
        }
        #expect(try await service.get("/groups").text == fixture.value.mergedJSON)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("an upstream's numeric headers at any extreme fail the call or are ignored, never a trap", arguments: [
        "Content-Length: 18446744073709551616", "Content-Length: 9223372036854775808", "Content-Length: -1", "Content-Length: 1e308",
        "Retry-After: 18446744073709551616", "Retry-After: -1", "Age: 9223372036854775808", "Age: nan",
        "Cache-Control: max-age=18446744073709551616", "Cache-Control: max-age=1e308, s-maxage=-1", "Transfer-Encoding: chunked",
    ])
    func upstreamHeaders(header: String) async throws {
        let upstream = try RawUpstream.start { request in
            let body = request.head.hasPrefix("GET /groups ") ? #"{"result":[{"id":"a","name":"A"}]}"# : #"{"result":{"taskCount":1}}"#
            return .sendAndClose(Array(Self.reply(header, body: body).utf8))
        }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL))
        let answer = try await service.get("/groups")
        #expect([200, 502].contains(answer.status), "\(header): \(answer.status) \(answer.text)")
        #expect(try await service.get("/healthz").status == 200)
        await service.stop()
        upstream.stop()
    }

    /// An answer of `body` with `header`: as its framing when it frames (a chunk size past
    /// any integer for chunked), else beside a true `Content-Length`.
    static func reply(_ header: String, body: String) -> String {
        if header.hasPrefix("Content-Length") { return "HTTP/1.1 200 OK\r\n\(header)\r\n\r\n\(body)" }
        if header.hasPrefix("Transfer-Encoding") { return "HTTP/1.1 200 OK\r\n\(header)\r\n\r\nffffffffffffffffff\r\n\(body)" }
        return "HTTP/1.1 200 OK\r\n\(header)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    @Test("a fleet's rate-limit state in Redis at any extreme, as anyone with Redis may write it: a decision within one window, never a trap")
    func rateLimitStateInRedis() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { fixture.reply(to: $0) ?? .json("{}", status: 404) }
        let service = try await ServiceHarness(yaml: ServiceHarness.groupsYAML(upstream: upstream.baseURL) + """

            server:
              rateLimit: {rate: 10/s, burst: 5, by: ip}
            cluster: {redis: "\(redis.url)", leaseTTL: 1s, secret: "\(FleetTests.secret)"}
            """)
        let client = try await RawRedisClient(port: redis.port)
        // The limit is decided through Redis once the worker's link is up: asked until its
        // key is there (at most 500 requests, each refused or not, all cheap).
        var key: String?
        for _ in 0..<500 where key == nil {
            _ = try await service.get("/groups")
            if case .array(let keys?) = try await client.command("KEYS", "*:ratelimit:*") { key = keys.first?.text }
        }
        let stored = try #require(key)
        for value in Self.numbers + ["nan", "inf", "-inf", "1e309", "", "9999999999999999999999999999"] {
            #expect(try await client.command("SET", stored, value) == .simple("OK"))
            let answer = try await service.get("/groups")
            #expect([200, 429].contains(answer.status), "\(value): \(answer.status)")
            if answer.status == 429 {
                // A forged state refuses for at most one window (burst 5 at 10/s: 1 s).
                #expect(answer.header("Retry-After") == "1", "\(value): \(answer.header("Retry-After") ?? "-")")
            }
        }
        #expect(try await service.get("/healthz").status == 200)
        client.close()
        await service.stop()
        redis.stop()
        await upstream.shutdown()
    }
}
