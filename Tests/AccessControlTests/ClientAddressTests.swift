import Testing
@testable import AccessControl
@testable import TributaryConfiguration

/// How a client is named by its address: through trusted proxies only, in one canonical form.
@Suite("Client addresses: X-Forwarded-For through trusted proxies, canonical names")
struct ClientAddressTests {
    @Test("X-Forwarded-For names the client only through a trusted proxy: the right-most address that is not one")
    func forwardedFor() {
        let proxies = [AddressRange("10.0.0.0/8")!, AddressRange("::1")!]
        #expect(ClientAddress.client(peer: "10.0.0.5", forwardedFor: "6.6.6.6, 203.0.113.7, 10.0.0.9", trusting: proxies) == "203.0.113.7")
        #expect(ClientAddress.client(peer: "10.0.0.5", forwardedFor: "10.1.1.1,10.2.2.2", trusting: proxies) == "10.1.1.1")
        #expect(ClientAddress.client(peer: "10.0.0.5", forwardedFor: "", trusting: proxies) == "10.0.0.5")
        #expect(AddressRange("::ffff:10.1.2.3").map { _ in proxies[0].contains("::ffff:10.1.2.3") } == true)
        #expect(!proxies[0].contains("11.0.0.1"))
        #expect(AddressRange("2001:db8::/32")!.contains("2001:db8::1"))
        #expect(AddressRange("10.0.0.0/33") == nil && AddressRange("nonsense") == nil)
    }

    @Test("client names are canonical addresses: IPv4, IPv4-mapped as IPv4, IPv6 per /64; an entry that is no address stops the walk")
    func canonicalNames() {
        let proxies = [AddressRange("10.0.0.0/8")!]
        let name = { (peer: String, forwarded: String) in ClientAddress.client(peer: peer, forwardedFor: forwarded, trusting: proxies) }
        #expect(name("10.0.0.5", "203.0.113.7") == "203.0.113.7")
        #expect(name("10.0.0.5", "::ffff:203.0.113.7") == "203.0.113.7")
        #expect(name("10.0.0.5", "2001:DB8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(name("10.0.0.5", "2001:db8:1:2::1") == "2001:db8:1:2::/64")
        #expect(name("10.0.0.5", "[2001:db8:1:2::1]:443") == "2001:db8:1:2::/64")
        #expect(name("10.0.0.5", "203.0.113.7:5555") == "203.0.113.7")
        // Not an address: the last trusted hop counts, the peer or the proxy right of it.
        #expect(name("10.0.0.5", "bogus") == "10.0.0.5")
        #expect(name("10.0.0.5", "203.0.113.7, bogus") == "10.0.0.5", "nothing left of an entry no proxy vouched for")
        #expect(name("10.0.0.5", "203.0.113.7, unknown, 10.0.0.9") == "10.0.0.9")
        #expect(name("10.0.0.5", "bogus, 203.0.113.7") == "203.0.113.7", "what the client wrote left of its address is not read")
        for hostile in ["203.0.113.7:", "203.0.113.7:99999999", "1.2.3", "01.2.3.4", "[2001:db8::1", "1.2.3.4/8", "_", "203.0.113.7 x", "[::1]x"] {
            #expect(name("10.0.0.5", hostile) == "10.0.0.5", "\(hostile)")
        }
        #expect(name("10.0.0.5", "2001:db8::1:80") == "2001:db8::/64", "a bare IPv6 address is read whole, never as host:port")
        // The peer itself, untrusted, is named the same way.
        #expect(name("2001:db8:9:9::5", "203.0.113.7") == "2001:db8:9:9::/64")
        #expect(name("::ffff:192.0.2.1", "203.0.113.7") == "192.0.2.1")
        #expect(ClientAddress.canonical("unknown") == "unknown")
    }
}
