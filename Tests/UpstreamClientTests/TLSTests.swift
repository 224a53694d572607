import UpstreamClient
import Testing
import TributaryTesting

@Suite("HTTPS upstreams")
struct TLSTests {
    typealias Harness = UpstreamClientTests.Harness

    @Test("a call to an HTTPS upstream verifies its certificate against the configured CA")
    func verifiedCall() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        let upstream = try await ScriptedUpstream.start(
            tls: .server(certificateChainFile: certificates.serverChainFile, privateKeyFile: certificates.serverKeyFile)
        ) { request in .json(#"{"secure":""# + request.path + #""}"#) }
        let harness = try await Harness(.init(tls: .client(caFile: certificates.caFile)))
        let base = try BaseURL(upstream.baseURL)
        for id in 0..<3 { _ = try await harness.start(id, UpstreamRequest(base: base, path: "/s/\(id)")) }
        #expect(await harness.outcomes.wait(timeout: .seconds(10)) { $0.count == 3 })
        for (id, outcome) in harness.outcomes.value {
            #expect(String(decoding: try outcome.get().body, as: UTF8.self) == #"{"secure":"/s/\#(id)"}"#)
        }
        #expect(upstream.requests.allSatisfy { $0.header("Host") == "localhost:\(upstream.port)" })
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a certificate from an unknown CA fails the call with a TLS error")
    func unknownAuthority() async throws {
        let certificates = try await TestCertificates.make()
        let stranger = try await TestCertificates.make(authorityName: "Somebody Else")
        defer { certificates.remove(); stranger.remove() }
        let upstream = try await ScriptedUpstream.start(
            tls: .server(certificateChainFile: certificates.serverChainFile, privateKeyFile: certificates.serverKeyFile)
        ) { _ in .json("{}") }
        let harness = try await Harness(.init(tls: .client(caFile: stranger.caFile)))
        _ = try await harness.start(1, UpstreamRequest(base: BaseURL(upstream.baseURL), path: "/"))
        #expect(await harness.outcomes.wait(timeout: .seconds(10)) { $0[1] != nil })
        guard case .failure(let error) = harness.outcomes.value[1] else {
            Issue.record("the call succeeded against an unverifiable certificate")
            return
        }
        #expect(error.kind == .tls)
        #expect(upstream.requests.isEmpty, "no request may be sent over an unverified connection")
        await harness.stop()
        await upstream.shutdown()
    }

    @Test("a certificate for another host name fails the call with a TLS error")
    func wrongHostName() async throws {
        let certificates = try await TestCertificates.make(subjectAltNames: "DNS:elsewhere.test")
        defer { certificates.remove() }
        let upstream = try await ScriptedUpstream.start(
            tls: .server(certificateChainFile: certificates.serverChainFile, privateKeyFile: certificates.serverKeyFile)
        ) { _ in .json("{}") }
        let harness = try await Harness(.init(tls: .client(caFile: certificates.caFile)))
        _ = try await harness.start(1, UpstreamRequest(base: BaseURL(upstream.baseURL), path: "/"))
        #expect(await harness.outcomes.wait(timeout: .seconds(10)) { $0[1] != nil })
        guard case .failure(let error) = harness.outcomes.value[1] else {
            Issue.record("the call succeeded against a certificate for another name")
            return
        }
        #expect(error.kind == .tls)
        await harness.stop()
        await upstream.shutdown()
    }
}
