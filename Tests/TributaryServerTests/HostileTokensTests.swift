import Foundation
import Testing
@testable import AccessControl
@testable import TributaryServer
import TributaryTesting

/// Bearer tokens made to break what reads them before any signature is checked: jwt-kit
/// decodes a token's header and payload with Foundation's `JSONDecoder`, which in Swift 6.3.1
/// traps on a text that ends at its 513th nested array. Each is refused as an invalid token,
/// on every way a token comes in, and the process goes on.
@Suite("Hostile tokens: nesting, shape and encoding refused before jwt-kit reads them")
struct HostileTokensTests {
    static func part(_ text: String) -> String { TestTokens.base64URL(Array(text.utf8)) }

    /// Tokens no key signed, whose header or payload is built to hurt a JSON decoder.
    static let tokens: [(what: String, token: String)] = {
        let header = part(#"{"alg":"HS256","kid":"hs","typ":"JWT"}"#)
        let claims = part(#"{"sub":"alice","exp":4102444800}"#)
        var tokens: [(String, String)] = []
        for depth in [512, 513, 514, 1000] {
            let open = String(repeating: "[", count: depth)
            tokens.append(("payload ending \(depth) arrays deep", "\(header).\(part(open)).c2ln"))
            tokens.append(("header ending \(depth) arrays deep", "\(part(open)).\(claims).c2ln"))
            tokens.append(("payload \(depth) objects deep", "\(header).\(part(String(repeating: #"{"a":"#, count: depth))).c2ln"))
        }
        tokens.append(("1000 arrays, closed", "\(header).\(part(String(repeating: "[", count: 1000) + String(repeating: "]", count: 1000))).c2ln"))
        tokens.append(("not base64url", "\(header).%%%.c2ln"))
        tokens.append(("four parts", "\(header).\(claims).c2ln.c2ln"))
        tokens.append(("a payload that is not JSON", "\(header).\(part("\u{0}\u{1}[[[")).c2ln"))
        return tokens
    }()

    @Test("every hostile token is 401 invalid_token in the header, the cookie and the query, JSON and stream; the service answers after")
    func refused() async throws {
        let world = try await AuthTests.World.start(groupsAuth: "auth: {required: true}")
        for (what, token) in Self.tokens {
            for (carried, path, headers) in [
                ("header", "/groups", TestTokens.bearer(token)), ("cookie", "/groups", [("Cookie", "tributary_token=\(token)")]),
                ("query", "/groups?access_token=\(token)", []),
            ] {
                let answer = try await world.service.get(path, headers: headers)
                #expect(answer.status == 401, "\(what), \(carried)")
                #expect(answer.header("WWW-Authenticate")?.contains("invalid_token") == true, "\(what), \(carried)")
            }
            let stream = try await world.service.events("/events?resource=groups", headers: TestTokens.bearer(token))
            #expect(stream.head.status == 401, "\(what), stream")
            stream.close()
        }
        #expect(try await world.service.get("/groups", headers: TestTokens.bearer(try await world.tokens.token())).status == 200)
        await world.stop()
    }

    @Test("the shape check: three base64url parts, header and payload nested at most 32 deep; a real token passes")
    func shape() async throws {
        let tokens = try await TestTokens()
        for kid in TestTokens.Kid.allCases {
            #expect(TokenShape.problem(Array(try await tokens.token(kid).utf8)) == nil, "\(kid)")
        }
        #expect(TokenShape.nesting(of: Array(#"{"a":"[[[[","b":[{"c":[]}]}"#.utf8)) == 4)
        #expect(TokenShape.base64URLDecoded(Array("aGk_-w".utf8)[...]) == [0x68, 0x69, 0x3F, 0xFB])
        #expect(TokenShape.base64URLDecoded(Array("aGk=".utf8)[...]) == Array("hi".utf8))
        // All but the payload that is no JSON: shallow, it is jwt-kit's to refuse.
        for (what, token) in Self.tokens where what != "a payload that is not JSON" {
            #expect(TokenShape.problem(Array(token.utf8)) != nil, "\(what)")
        }
    }
}
