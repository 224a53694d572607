@testable import HTTPCore
@testable import HTTPServer
@testable import UpstreamClient
import Testing

@Suite("Routing and URL pieces")
struct RoutingTests {
    enum Route: Equatable { case groups, reload, trigger }

    var router: Router<Route> {
        var router = Router<Route>()
        router.add(.get, "/groups", .groups)
        router.add(.post, "/groups/reload", .reload)
        router.add(.post, "/streams/{id}/triggers/{name}", .trigger)
        return router
    }

    @Test("a path with parameters matches, each parameter percent-decoded")
    func parameters() {
        guard case .found(let route, let parameters) = router.match(.post, path: "/streams/ab%2Fc/triggers/load%20more") else {
            Issue.record("no match")
            return
        }
        #expect(route == .trigger)
        #expect(parameters == ["id": "ab/c", "name": "load more"])
    }

    @Test("HEAD uses GET routes; another method gets 405 with the allowed ones; unknown paths 404")
    func methodsAndMisses() {
        if case .found(let route, _) = router.match(.head, path: "/groups") { #expect(route == .groups) } else { Issue.record("HEAD") }
        if case .methodNotAllowed(let allowed) = router.match(.delete, path: "/groups") { #expect(allowed == [.get]) } else {
            Issue.record("DELETE /groups should be 405")
        }
        if case .notFound = router.match(.get, path: "/nope") {} else { Issue.record("/nope should be 404") }
        if case .notFound = router.match(.get, path: "/groups/extra/segments") {} else { Issue.record("longer path should be 404") }
        if case .notFound = router.match(.post, path: "/streams/%zz/triggers/x") {} else { Issue.record("bad escape should be 404") }
    }

    @Test("an earlier route wins; a literal segment is matched after decoding")
    func orderAndDecodedLiterals() {
        var router = router
        router.add(.get, "/groups/{id}", .reload)
        router.add(.get, "/groups/special", .trigger)
        if case .found(let route, let parameters) = router.match(.get, path: "/groups/special") {
            #expect(route == .reload)
            #expect(parameters == ["id": "special"])
        } else { Issue.record("/groups/special") }
        if case .found(let route, _) = router.match(.get, path: "/%67roups") { #expect(route == .groups) } else {
            Issue.record("/%67roups is /groups")
        }
    }

    @Test("literal segments compare by their bytes: an equivalent spelling in Unicode is another path")
    func literalsByBytes() {
        var router = Router<Route>()
        router.add(.get, "/caf\u{E9}/{id}", .groups)
        func found(_ path: String) -> [String: String]? {
            if case .found(_, let parameters) = router.match(.get, path: path) { return parameters }
            return nil
        }
        #expect(found("/caf%C3%A9/x") == ["id": "x"])
        #expect(found("/cafe%CC%81/x") == nil, "e and U+0301 are other bytes than U+00E9")
        #expect(found("/caf%C3/x") == nil, "a lone lead byte is not UTF-8: 404")
        #expect(found("//caf%C3%A9//x%2Fy/") == ["id": "x/y"], "empty segments left out, each decoded")
    }

    @Test("a path without parameters is found whatever its spelling, after any earlier route of any method that matches it")
    func exactPaths() {
        var router = Router<Route>()
        router.add(.get, "/{name}/reload", .trigger)
        router.add(.get, "/groups/reload", .reload)  // after a route that matches it: never found
        router.add(.get, "/groups", .groups)
        router.add(.post, "/groups", .trigger)
        router.add(.get, "/", .reload)
        func found(_ method: HTTPMethod, _ path: String) -> Route? {
            if case .found(let route, _) = router.match(method, path: path) { return route }
            return nil
        }
        #expect(found(.get, "/groups") == .groups)
        #expect(found(.head, "/groups") == .groups)
        #expect(found(.post, "/groups") == .trigger)
        #expect(found(.get, "/groups/") == .groups)
        #expect(found(.get, "//groups") == .groups)
        #expect(found(.get, "/group%73") == .groups)
        #expect(found(.get, "/groups/reload") == .trigger)
        #expect(found(.get, "/other/reload") == .trigger)
        #expect(found(.get, "/") == .reload)
        if case .methodNotAllowed(let allowed) = router.match(.delete, path: "/groups") {
            #expect(allowed == [.get, .post])
        } else { Issue.record("DELETE /groups should be 405") }
    }

    @Test("Vary values merge: names of the second not in the first are appended, compared without case")
    func varyMerging() {
        #expect(ServerRequest.mergedVary("Origin", "Accept") == "Origin, Accept")
        #expect(ServerRequest.mergedVary("Accept", "accept") == "Accept")
        #expect(ServerRequest.mergedVary("Origin, Accept", "Accept-Encoding") == "Origin, Accept, Accept-Encoding")
        #expect(ServerRequest.mergedVary("Origin", "accept ,  ORIGIN") == "Origin, accept")
        #expect(ServerRequest.mergedVary("A^", "a~") == "A^, a~")
        // Names joined as this joins them, one more merged in place; written otherwise, rejoined.
        #expect(ServerRequest.mergedVary("Accept, Authorization", "Accept-Encoding") == "Accept, Authorization, Accept-Encoding")
        #expect(ServerRequest.mergedVary("Accept, Authorization", "authorization") == "Accept, Authorization")
        #expect(ServerRequest.mergedVary("Accept,Authorization", "Origin") == "Accept, Authorization, Origin")
        #expect(ServerRequest.mergedVary("Accept,  Authorization", "ACCEPT") == "Accept, Authorization")
    }

    @Test("every byte but RFC 3986's unreserved ones is percent-encoded, in upper-case hex")
    func percentEncodingOfEveryByte() {
        let unreserved = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8)
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in UInt8.min...UInt8.max {
            let expected = unreserved.contains(byte) ? [byte] : [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            let encoded = [byte].withUnsafeBufferPointer { input in
                [UInt8](unsafeUninitializedCapacity: 3) { output, count in
                    count = QueryString.writePercentEncoded(input, into: output)
                }
            }
            #expect(encoded == expected, "byte \(byte)")
            #expect([byte].withUnsafeBufferPointer(QueryString.percentEncodedCount) == expected.count)
        }
    }

    @Test("query strings decode + and %XX; ids encode to exactly one path segment")
    func queryAndEncoding() {
        #expect(QueryString.parse("q=swift+nio&topic=a%2Fb&flag") == ["q": "swift nio", "topic": "a/b", "flag": ""])
        #expect(QueryString.percentEncoded("../../admin") == "..%2F..%2Fadmin")
        #expect(QueryString.percentEncoded("a b?c#d%") == "a%20b%3Fc%23d%25")
        #expect(QueryString.percentEncoded("Grüße") == "Gr%C3%BC%C3%9Fe")
        #expect(QueryString.percentDecoded("Gr%C3%BC%C3%9Fe") == "Grüße")
        #expect(QueryString.percentDecoded("%E2%28") == nil)
    }

    @Test("base URLs name an origin and a path prefix, and bad ones say why")
    func baseURLs() throws {
        let plain = try BaseURL("http://127.0.0.1:8081/")
        #expect(plain.origin == .init(isTLS: false, host: "127.0.0.1", port: 8081))
        #expect(plain.path == "")
        let secure = try BaseURL("https://api.example.com/v2")
        #expect(secure.origin.port == 443)
        #expect(secure.path == "/v2")
        #expect(throws: BaseURLError.self) { try BaseURL("ftp://example.com") }
        #expect(throws: BaseURLError.self) { try BaseURL("http://") }
        #expect(throws: BaseURLError.self) { try BaseURL("http://example.com/?q=1") }
    }

    @Test("base URLs are equal, and hash alike, by origin and path, whichever parse made them")
    func baseURLEquality() throws {
        let first = try BaseURL("http://127.0.0.1:8081/api/")
        let again = try BaseURL("http://127.0.0.1:8081/api")
        #expect(first == again && first.hashValue == again.hashValue)
        #expect(first == first)
        #expect(first != (try BaseURL("http://127.0.0.1:8081/other")))
        #expect(first != (try BaseURL("http://127.0.0.1:8082/api")))
        #expect(first != (try BaseURL("https://127.0.0.1:8081/api")))
        let bases: Set = [first, again, try BaseURL("http://127.0.0.1:8081")]
        #expect(bases.count == 2)
        #expect(first.description == "http://127.0.0.1:8081/api")
    }
}
