import Aggregation
@testable import Fleet
import HTTPServer
import Testing
@testable import TributaryConfiguration

/// What a replica writes to Redis is sealed with the fleet's secret, and what it reads there
/// is checked before it is believed: the seal (MAC and time) and the messages inside it.
@Suite("Fleet messages: sealed, checked, refused")
struct FleetSealTests {
    /// The fleet's shared secret, as `TRIBUTARY_CLUSTER_SECRET` gives it.
    static let secretText = "fleet-tests-secret-6f1d0c9a4b2e8d73"
    static let secret = try! ClusterSecret(secretText, at: "test")
    static let seal = FleetSeal(secret: secret, maximumAhead: .seconds(3))
    static let now: UInt64 = 1_790_000_000_000
    static let context = "tributary:0123456789abcdef:states:groups"

    @Test("a sealed value opens where it was written, with its time and payload; its MAC is HMAC-SHA256 of the context, a zero byte and the rest")
    func roundTrip() throws {
        let sealed = Self.seal.seal(Array("payload with spaces\nand lines".utf8), at: Self.now, for: Self.context)
        let opened = try Self.seal.open(sealed, for: Self.context, now: Self.now).get()
        #expect(opened.time == Self.now)
        #expect(Array(opened.payload) == Array("payload with spaces\nand lines".utf8))
        // The documented format, computed independently of FleetSeal.
        let signed = Array("\(Self.now) payload with spaces\nand lines".utf8)
        let mac = MessageAuthentication.sha256Hex(key: Array(Self.secretText.utf8), message: Array(Self.context.utf8) + [0] + signed)
        #expect(sealed == mac + [UInt8(ascii: " ")] + signed)
    }

    @Test("RFC 4231 test case 2: the HMAC is HMAC-SHA256, and a code is checked whole")
    func knownAnswer() {
        let key = Array("Jefe".utf8), message = Array("what do ya want for nothing?".utf8)
        let code = MessageAuthentication.sha256Hex(key: key, message: message)
        #expect(String(decoding: code, as: UTF8.self) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(MessageAuthentication.isValid(hexCode: code, key: key, message: message))
        var changed = code
        changed[63] = changed[63] == UInt8(ascii: "3") ? UInt8(ascii: "4") : UInt8(ascii: "3")
        #expect(!MessageAuthentication.isValid(hexCode: changed, key: key, message: message))
        #expect(!MessageAuthentication.isValid(hexCode: code.dropLast(), key: key, message: message))
        #expect(!MessageAuthentication.isValid(hexCode: Array(repeating: UInt8(ascii: "z"), count: 64), key: key, message: message))
    }

    @Test("another secret, another context, one changed byte: refused as mac")
    func forgeries() throws {
        let sealed = Self.seal.seal(Array("null\n{}".utf8), at: Self.now, for: Self.context)
        let otherFleet = FleetSeal(secret: try ClusterSecret("another-secret-0123456789", at: "test"), maximumAhead: .seconds(3))
        #expect(otherFleet.fleet != Self.seal.fleet, "fleets with other secrets have other names, hence other keys")
        #expect(otherFleet.open(sealed, for: Self.context, now: Self.now).rejection == .mac)
        #expect(Self.seal.open(sealed, for: "tributary:0123456789abcdef:states:rows", now: Self.now).rejection == .mac)
        for index in [0, 63, 65, 70, sealed.count - 1] {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(Self.seal.open(tampered, for: Self.context, now: Self.now).rejection == .mac, "byte \(index) changed")
        }
        // A forger's best guess at the format, without the secret.
        let guessed = Array((String(repeating: "0", count: 64) + " 18446744073709551615 null\nNOT JSON </script> {\"").utf8)
        #expect(Self.seal.open(guessed, for: Self.context, now: Self.now).rejection == .mac)
    }

    @Test("a time ahead of now by more than leaseTTL is refused, up to the largest one; at the bound it is taken")
    func future() {
        let ahead: UInt64 = 3000
        for (time, refused) in [(Self.now + ahead, false), (Self.now + ahead + 1, true), (UInt64.max, true)] {
            let sealed = Self.seal.seal(Array("x".utf8), at: time, for: Self.context)
            #expect((Self.seal.open(sealed, for: Self.context, now: Self.now).rejection == .future) == refused, "\(time)")
        }
        let atTheEnd = Self.seal.seal(Array("x".utf8), at: .max, for: Self.context)
        #expect((try? Self.seal.open(atTheEnd, for: Self.context, now: .max - 10).get().time) == .max, "now + leaseTTL saturates")
    }

    @Test("no MAC, no time, a time that is no number, too long: refused as malformed or too_large before anything is parsed")
    func shapes() {
        #expect(Self.seal.open([], for: Self.context, now: Self.now).rejection == .malformed)
        #expect(Self.seal.open(Array("v1 18446744073709551615\nnull\n{}".utf8), for: Self.context, now: Self.now).rejection == .malformed)
        #expect(Self.seal.open(Array(repeating: UInt8(ascii: "a"), count: 5000), for: Self.context, now: Self.now).rejection == .tooLarge)
        for signed in ["", "x", "12x payload", "-1 payload", "999999999999999999999 payload", " payload"] {
            let mac = MessageAuthentication.sha256Hex(key: Array(Self.secretText.utf8), message: Array(Self.context.utf8) + [0] + Array(signed.utf8))
            #expect(Self.seal.open(mac + [UInt8(ascii: " ")] + Array(signed.utf8), for: Self.context, now: Self.now).rejection == .malformed, "\(signed)")
        }
    }

    @Test("a state round-trips; a document that is not JSON, larger than maxResponseBytes, or an error of no known code is refused")
    func states() throws {
        var state = LiveState()
        state.snapshot = Snapshot(json: Array(#"{"groups":[{"id":"g1"}]}"#.utf8))
        let payload = ClusterMessage.encode(state)
        #expect(try ClusterMessage.decodeState(payload[...], maximumDocumentBytes: 1024).get() == state)
        var failed = LiveState()
        failed.snapshot = state.snapshot
        failed.error = ResourceError(code: .upstreamTimeout, upstream: "tasks", path: "/groups", message: "no answer within 5s")
        #expect(try ClusterMessage.decodeState(ClusterMessage.encode(failed)[...], maximumDocumentBytes: 1024).get() == failed)
        #expect(try ClusterMessage.decodeState(ClusterMessage.encode(LiveState())[...], maximumDocumentBytes: 1024).get() == LiveState())

        for text in ["null\nNOT JSON </script> {\"", "null\n{\"a\":1} trailing", "nul\n{}", "[]\n{}", "{\"code\":\"nonsense\"}\n{}", "no line"] {
            #expect(ClusterMessage.decodeState(Array(text.utf8)[...], maximumDocumentBytes: 1024).rejection == .malformed, "\(text)")
        }
        let large = Array("null\n".utf8) + Array(#"{"a":""#.utf8) + Array(repeating: UInt8(ascii: "x"), count: 2000) + Array(#""}"#.utf8)
        #expect(ClusterMessage.decodeState(large[...], maximumDocumentBytes: 1024).rejection == .tooLarge)
        #expect((try? ClusterMessage.decodeState(large[...], maximumDocumentBytes: 4096).get()) != nil)
    }

    @Test("control requests and replies: random tags, a sender that is a replica id, an HTTP status; anything else is malformed")
    func addressed() {
        let from = StreamID.random().description
        let request = ClusterMessage.ControlRequest(tag: .max, from: from, stream: "d1g35t", control: .trigger("loadMore", arguments: ["topic": "a"]))
        #expect(ClusterMessage.decodeAddressed(ClusterMessage.encode(request)[...]) == .request(request))
        let input = ClusterMessage.ControlRequest(tag: 7, from: from, stream: "d1g35t", control: .input("q", value: "vapor"))
        #expect(ClusterMessage.decodeAddressed(ClusterMessage.encode(input)[...]) == .request(input))
        let reply = ClusterMessage.ControlReply(tag: 9, outcome: .failure(HTTPError(status: 404, code: "unknown_trigger", message: "no")))
        #expect(ClusterMessage.decodeAddressed(ClusterMessage.encode(reply)[...]) == .reply(reply))
        for text in [
            #"{"kind":"control","tag":1,"from":"replica:evil","stream":"d","trigger":"reload"}"#,
            #"{"kind":"reply","tag":1,"status":99999}"#,
            #"{"kind":"reply","tag":-1,"status":202}"#,
            #"{"kind":"reload","tag":1}"#,
            "NOT JSON",
        ] {
            #expect(ClusterMessage.decodeAddressed(Array(text.utf8)[...]) == nil, "\(text)")
        }
    }

    @Test("reloads carry a nonce and a fleet name (a resource's, or a keyed pipeline's); leases and locations a replica id")
    func reloadsAndReplicas() {
        let reload = ClusterMessage.encode(ClusterMessage.Reload(nonce: 0xdead_beef, name: "groups"))
        #expect(String(decoding: reload, as: UTF8.self) == "00000000deadbeef groups", "an unaimed reload as before aimed ones")
        #expect(ClusterMessage.decodeReload(reload[...]) == ClusterMessage.Reload(nonce: 0xdead_beef, name: "groups"))
        let keyed = "teamgroups:" + String(repeating: "0123456789abcdef", count: 2)
        #expect(ClusterMessage.decodeReload(ClusterMessage.encode(ClusterMessage.Reload(nonce: 1, name: keyed))[...])?.name == keyed)
        for text in ["groups", "000000000000000g groups", "0000000000000001 ../x", "0000000000000001 ",
                     "0000000000000001 groups:", "0000000000000001 :" + String(repeating: "a", count: 32),
                     "0000000000000001 groups:" + String(repeating: "A", count: 32),
                     "0000000000000001 groups:" + String(repeating: "a", count: 31),
                     "0000000000000001 groups:" + String(repeating: "a", count: 32) + ":a"] {
            #expect(ClusterMessage.decodeReload(Array(text.utf8)[...]) == nil, "\(text)")
        }
        let replica = StreamID.random().description
        #expect(ClusterMessage.decodeReplica(Array(replica.utf8)[...]) == replica)
        #expect(ClusterMessage.decodeReplica(Array("evil".utf8)[...]) == nil)
    }

    @Test("an aimed reload carries its parameter values byte for byte, as a JSON object after the name; old and odd forms are told apart")
    func aimedReloads() {
        // K and the Kelvin sign are two values; quotes, backslashes and spaces survive the trip.
        let values = ParameterValues(["team": "\u{212A}", "status": #"a "b" \ c"#])
        let aimed = ClusterMessage.Reload(nonce: 7, name: "groups", values: values)
        let bytes = ClusterMessage.encode(aimed)
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("0000000000000007 groups {"))
        let decoded = ClusterMessage.decodeReload(bytes[...])
        #expect(decoded == aimed)
        #expect(decoded?.values.holds(ParameterValues(["team": "\u{212A}"])) == true)
        #expect(decoded?.values.holds(ParameterValues(["team": "K"])) == false)
        // A message as replicas wrote it before aimed reloads: every pipeline of the resource.
        #expect(ClusterMessage.decodeReload(Array("0000000000000009 groups".utf8)[...])?.values == ParameterValues.none)
        let keyed = "groups:" + String(repeating: "a", count: 32)
        for text in ["0000000000000001 groups ", "0000000000000001 groups {}", "0000000000000001 groups []",
                     #"0000000000000001 groups {"team":1}"#, #"0000000000000001 groups {"team":""}"#, #"0000000000000001 groups {"":"x"}"#,
                     #"0000000000000001 groups {"team":"a","team":"b"}"#, #"0000000000000001 groups {"team":"a"} x"#,
                     "0000000000000001 \(keyed) " + #"{"team":"a"}"#] {
            #expect(ClusterMessage.decodeReload(Array(text.utf8)[...]) == nil, "\(text)")
        }
    }

    @Test("a nonce seen within its window is a replay; after it, or another nonce, is not; the memory is pruned")
    func nonces() {
        var recent = RecentNonces()
        var sightings: [Bool] = []
        sightings.append(recent.firstSight(of: 1, until: 100, now: 0))
        sightings.append(recent.firstSight(of: 1, until: 100, now: 50))
        sightings.append(recent.firstSight(of: 2, until: 100, now: 50))
        sightings.append(recent.firstSight(of: 1, until: 300, now: 200))  // expired: a stale check refuses it anyway
        #expect(sightings == [true, false, true, true])
        var fresh = 0
        for nonce in UInt64(10)..<1000 where recent.firstSight(of: nonce, until: 400 + nonce, now: 300 + nonce) { fresh += 1 }
        #expect(fresh == 990, "each new, the expired ones pruned as it grew")
        let replayed = recent.firstSight(of: 999, until: 2000, now: 1300)
        #expect(!replayed)
    }

    @Test("remote numbers meet local ones with saturating sums")
    func saturation() {
        #expect(UInt64.max.addingSaturated(1) == .max)
        #expect(UInt64(1).addingSaturated(2) == 3)
    }
}

extension Result {
    /// The failure, or nil.
    var rejection: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
