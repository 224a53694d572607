@testable import EventLoop
@testable import UpstreamClient
import Testing
import TributaryTesting

/// The upstream client against upstreams that fail or misbehave on purpose: connects that
/// fail inside libevent's own call, a line of waiting calls under saturation, bytes left over
/// after an answer, a chunk-size line that never ends, answers over a request's size limit.
@Suite("Upstream client: hostile and failing upstreams")
struct HostileUpstreamTests {
    typealias Harness = UpstreamClientTests.Harness

    @Test("a connect that fails inside evhttp_make_request fails each call once, later, and frees nothing twice")
    func immediateConnectFailure() async throws {
        // Port 0: connect() fails at once, so libevent calls back and frees the request before
        // evhttp_make_request returns. The deadline or a cancel used to free it a second time.
        let base = try BaseURL("http://127.0.0.1:0")
        let harness = try await Harness(.init(defaultPoolCapacity: 2))
        var started: [LoopBound<UpstreamCall>] = []
        for id in 0..<20 {
            started.append(try await harness.start(id, UpstreamRequest(base: base, path: "/x", timeout: .milliseconds(150))))
        }
        let calls = started
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0.count == 20 })
        #expect(harness.outcomes.value.values.allSatisfy { failureKind($0) == .connectionFailed })
        // Past every call's deadline, and after cancelling each: nothing more happens.
        let pastDeadlines = Observed(false)
        try await harness.thread.run { loop in
            for call in calls { call.value.cancel() }
            let scheduler = EventLoopScheduler(loop: loop)
            scheduler.schedule(after: scheduler.now.advanced(by: .milliseconds(300))) { pastDeadlines.update { $0 = true } }
        }
        #expect(await pastDeadlines.wait(timeout: .seconds(5)) { $0 })
        #expect(harness.outcomes.value.count == 20)
        let client = harness.client
        #expect(try await harness.thread.run { _ in client.value.connectionCount(for: base) } == 0)
        try await harness.thread.run { _ in for call in calls { call.release() } }
        await harness.stop()
    }

    @Test("a full line of waiting calls fails new calls at once with saturated; calls that give up leave the line")
    func boundedLine() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .hang }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness(.init(defaultPoolCapacity: 1, defaultMaxQueue: 3))
        // The one connection stays busy for longer than the test takes (a loaded run saw the
        // default 10 s pass, the connection freed, and a waiting call sent).
        _ = try await harness.start(0, UpstreamRequest(base: base, path: "/busy", timeout: .seconds(600)))
        #expect(await upstream.records.wait(timeout: .seconds(5)) { $0.count == 1 })
        // Three wait, the fourth is refused: started in one loop turn, so none times out first.
        let client = harness.client
        let outcomes = harness.outcomes
        let finishOrder = Observed<[Int]>([])
        try await harness.thread.run { _ in
            for id in 1...4 {
                let path = id == 4 ? "/refused" : "/wait"
                client.value.execute(UpstreamRequest(base: base, path: path, timeout: id == 4 ? .seconds(10) : .seconds(1))) {
                    outcome in
                    // The order first: the test reads it once it sees the outcome.
                    finishOrder.update { $0.append(id) }
                    outcomes.update { $0[id] = outcome }
                }
            }
        }
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[4] != nil })
        #expect(failureKind(harness.outcomes.value[4]) == .saturated)
        // Told by order, not by time (a loaded machine may pass the line's 1 s before this
        // line runs): the refusal ends before any call of the line does.
        #expect(finishOrder.value.first == 4, "the refusal does not wait for the line: \(finishOrder.value)")
        // The three waiting calls time out; the line is empty again and takes new calls.
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { outcomes in (1...3).allSatisfy { outcomes[$0] != nil } })
        #expect((1...3).allSatisfy { failureKind(harness.outcomes.value[$0]) == .timeout })
        #expect(try await harness.thread.run { _ in client.value.waitingCount(for: base) } == 0)
        for id in 5...7 { _ = try await harness.start(id, UpstreamRequest(base: base, path: "/wait", timeout: .milliseconds(100))) }
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { outcomes in (5...7).allSatisfy { outcomes[$0] != nil } })
        #expect((5...7).allSatisfy { failureKind(harness.outcomes.value[$0]) == .timeout })
        #expect(upstream.requests.map(\.path) == ["/busy"])
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("under saturation, round after round of calls that time out in the line, the line keeps its bound and frees its slots")
    func lineStaysBoundedUnderSaturation() async throws {
        let upstream = try await ScriptedUpstream.start { _ in .hang }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness(.init(defaultPoolCapacity: 1, defaultMaxQueue: 50))
        // Busy for the whole test, however long a loaded run takes: with the default 10 s it
        // once timed out mid-test, freed the connection, and later rounds admitted calls the
        // full line should have refused.
        _ = try await harness.start(0, UpstreamRequest(base: base, path: "/busy", timeout: .seconds(600)))
        let client = harness.client
        let outcomes = harness.outcomes
        for round in 0..<20 {
            let ids = (round * 60 + 1)...(round * 60 + 60)
            let peakWaiting = try await harness.thread.run { _ in
                var peak = 0
                for id in ids {
                    client.value.execute(UpstreamRequest(base: base, path: "/wait", timeout: .milliseconds(30))) { outcome in
                        outcomes.update { $0[id] = outcome }
                    }
                    peak = max(peak, client.value.waitingCount(for: base))
                }
                return peak
            }
            #expect(peakWaiting == 50)
            #expect(await outcomes.wait(timeout: .seconds(5)) { outcomes in ids.allSatisfy { outcomes[$0] != nil } })
            // The slots of calls that left are compacted away, not kept for the whole saturation.
            let slots = try await harness.thread.run { _ in client.value.lineSlots(for: base) }
            #expect(slots <= 50 + 64, "\(slots) slots in the line after round \(round)")
        }
        let kinds = outcomes.value.values.compactMap(failureKind)
        #expect(kinds.filter { $0 == .saturated }.count == 20 * 10)
        #expect(kinds.filter { $0 == .timeout }.count == 20 * 50)
        #expect(try await harness.thread.run { _ in client.value.waitingCount(for: base) } == 0)
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("bytes an upstream leaves after an answer never become the next caller's answer", arguments: [
        "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhacked",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhacked",
    ])
    func leftoverBytesAreNotReused(firstAnswer: String) async throws {
        let upstream = try RawUpstream.start { request in
            request.connection == 0
                ? .send(Array(firstAnswer.utf8))
                : .send(Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh".utf8))
        }
        defer { upstream.stop() }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness()
        _ = try await harness.start(1, UpstreamRequest(base: base, path: "/first"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[1] != nil })
        _ = try await harness.start(2, UpstreamRequest(base: base, path: "/second"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[2] != nil })
        let second = try #require(try? harness.outcomes.value[2]?.get())
        #expect(String(decoding: second.body, as: UTF8.self) == "fresh")
        #expect(upstream.requests.value.map(\.connection) == [0, 1], "the second call went over a new connection")
        await harness.stop()
    }

    @Test("an endless chunk-size line fails the call early and the client stops reading")
    func endlessChunkSizeLine() async throws {
        let limit = 64 * 1024 * 1024
        let upstream = try RawUpstream.start { _ in
            .flood(prefix: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8), filler: UInt8(ascii: "0"), limit: limit)
        }
        defer { upstream.stop() }
        let harness = try await Harness()
        _ = try await harness.start(1, UpstreamRequest(base: try BaseURL(upstream.baseURL), path: "/endless", timeout: .seconds(20)))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[1] != nil })
        guard case .failure(let error) = harness.outcomes.value[1] else {
            Issue.record("the endless line was answered: \(String(describing: harness.outcomes.value[1]))")
            return
        }
        #expect(error.kind == .invalidResponse)
        #expect(error.detail.contains("chunk-size line"))
        #expect(await upstream.floods.wait(timeout: .seconds(10)) { $0.count == 1 })
        #expect(upstream.floods.value[0] < 8 * 1024 * 1024, "the client closed after at most a few socket buffers")
        await harness.stop()
    }

    @Test("a chunked answer of many small chunks, arriving together, is read whole")
    func manySmallChunks() async throws {
        let chunks = (0..<5000).map { index in "\(String(index % 13 + 1, radix: 16))\r\n\(String(repeating: "x", count: index % 13 + 1))\r\n" }
        let body = chunks.joined()
        let upstream = try RawUpstream.start { _ in
            .send(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(body)0\r\n\r\n".utf8))
        }
        defer { upstream.stop() }
        let harness = try await Harness()
        _ = try await harness.start(1, UpstreamRequest(base: try BaseURL(upstream.baseURL), path: "/chunks"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[1] != nil })
        let response = try #require(try? harness.outcomes.value[1]?.get())
        #expect(response.body.count == (0..<5000).reduce(0) { $0 + $1 % 13 + 1 })
        await harness.stop()
    }

    @Test("each request's own response limit applies, within the client's")
    func perRequestResponseLimit() async throws {
        let upstream = try await ScriptedUpstream.start { request in
            .text(String(repeating: "x", count: request.path.hasPrefix("/big") ? 60_000 : 10_000))
        }
        let base = try BaseURL(upstream.baseURL)
        let harness = try await Harness(.init(maxResponseBytes: 50_000))
        _ = try await harness.start(1, UpstreamRequest(base: base, path: "/small-limit", maxResponseBytes: 4096))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[1] != nil })
        #expect(failureKind(harness.outcomes.value[1]) == .responseTooLarge)
        _ = try await harness.start(2, UpstreamRequest(base: base, path: "/large-limit", maxResponseBytes: 20_000))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[2] != nil })
        #expect((try? harness.outcomes.value[2]?.get())?.body.count == 10_000)
        _ = try await harness.start(3, UpstreamRequest(base: base, path: "/big/over-the-client", maxResponseBytes: 100_000))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[3] != nil })
        #expect(failureKind(harness.outcomes.value[3]) == .responseTooLarge, "the client's own limit still holds")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("an IPv6 literal upstream is reached, with Host: [::1]:port")
    func ipv6Literal() async throws {
        let upstream = try await ScriptedUpstream.start(host: "::1") { _ in .json("{}") }
        let base = try BaseURL(upstream.baseURL)
        #expect(base.origin.host == "::1")
        let harness = try await Harness()
        _ = try await harness.start(1, UpstreamRequest(base: base, path: "/v6"))
        #expect(await harness.outcomes.wait(timeout: .seconds(5)) { $0[1] != nil })
        #expect((try? harness.outcomes.value[1]?.get())?.status == 200)
        #expect(upstream.requests.first?.header("Host") == "[::1]:\(upstream.port)")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("only a failed connection is worth another attempt", arguments: [
        (UpstreamError.Kind.connectionFailed, true), (.timeout, false), (.tls, false), (.responseTooLarge, false),
        (.invalidResponse, false), (.saturated, false),
    ])
    func retryableKinds(kind: UpstreamError.Kind, retryable: Bool) {
        #expect(UpstreamError(kind: kind, url: "http://x/y").isRetryable == retryable)
    }

    private func failureKind(_ outcome: Result<UpstreamResponse, UpstreamError>?) -> UpstreamError.Kind? {
        guard case .failure(let error) = outcome else { return nil }
        return error.kind
    }
}
