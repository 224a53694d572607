import HTTPServer
import Testing

/// What endpoints for this host's own clients check (a reload without an admin token): the
/// peer's numeric address, as the socket reports it. Tests can only connect over loopback
/// (everything they start listens there), so the addresses of other hosts are specified here,
/// on the check itself; end to end, `ReloadAccessTests` lets both loopbacks in.
@Suite("Loopback addresses")
struct LoopbackAddressTests {
    @Test("127.0.0.0/8, ::1 and 127.0.0.0/8 mapped into IPv6 (a dual-stack socket's IPv4 peer) are loopback",
          arguments: ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1", "::FFFF:127.1.2.3"])
    func loopback(_ address: String) {
        #expect(LoopbackAddress.contains(address))
    }

    @Test("every other address is not: private, public, unspecified, another host's mapped into IPv6, link-local, names, padding",
          arguments: [
              "10.0.0.1", "192.168.1.20", "172.17.0.2", "8.8.8.8", "0.0.0.0", "128.0.0.1", "126.255.255.255",
              "::", "::2", "::127.0.0.1", "::ffff:10.0.0.1", "::ffff:128.0.0.1", "2001:db8::1", "fe80::1", "fe80::1%lo",
              "localhost", "", "127.1", "127.0.0.1.example", " 127.0.0.1", "127.0.0.1 ",
          ])
    func notLoopback(_ address: String) {
        #expect(!LoopbackAddress.contains(address))
    }
}
