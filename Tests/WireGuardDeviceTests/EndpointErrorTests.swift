import Glibc
import Testing
import WireGuardDevice

/// A tunnel file's Endpoint that gives no address: the file and line, the host, and the
/// resolver's own words for its code.
@Suite struct EndpointErrorTests {
    @Test func eachCaseNamesTheLineAndTheHost() {
        #expect(EndpointError.unresolvable(host: "vpn.example", file: "/etc/wireguard/wg0.conf", line: 9, code: EAI_NONAME).description
            == "/etc/wireguard/wg0.conf:9: cannot resolve Endpoint host vpn.example: Name or service not known")
        #expect(EndpointError.noAddress(host: "vpn.example", file: "/etc/wireguard/wg0.conf", line: 9).description
            == "/etc/wireguard/wg0.conf:9: vpn.example has no IPv4 or IPv6 address")
    }

}
