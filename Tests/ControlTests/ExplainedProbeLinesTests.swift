import Addresses
import Control
import Testing

/// `vpnctl explain --probe`: the target it takes, and the child's line it reads back.
@Suite struct ExplainedProbeLinesTests {
    @Test func targetsAreAddressesWithAPort() {
        #expect(ExplainedProbe.target("192.0.2.80:8080") == Endpoint(address: IPAddress("192.0.2.80")!, port: 8080))
        #expect(ExplainedProbe.target("[2001:db8::80]:443") == Endpoint(address: IPAddress("2001:db8::80")!, port: 443))
        for wrong in ["192.0.2.80", "2001:db8::80:443", "example.com:80", "192.0.2.80:0", "192.0.2.80:65536", "[2001:db8::80]443", ""] {
            #expect(ExplainedProbe.target(wrong) == nil, "\(wrong)")
        }
    }

    @Test func theChildsLineIsComparedWithTheTunnelsAddresses() {
        let probe = ExplainedProbe(target: "192.0.2.80:8080")
        let tunnel = ["10.99.1.2/24", "fd99:1::2/64"]
        let through = probe.reading("vpnexec: a warning\nlocal 10.99.1.2 connected\n", tunnelAddresses: tunnel)
        #expect(through.localAddress == "10.99.1.2" && through.connected && through.tunnelAddress && through.error == nil)
        let v6 = probe.reading("local fd99:1::2 failed: Connection refused\n", tunnelAddresses: tunnel)
        #expect(v6.localAddress == "fd99:1::2" && !v6.connected && v6.tunnelAddress && v6.error == "Connection refused")
        let direct = probe.reading("local 198.51.100.2 connected\n", tunnelAddresses: tunnel)
        #expect(direct.localAddress == "198.51.100.2" && direct.connected && !direct.tunnelAddress)
        let nothing = probe.reading("", tunnelAddresses: tunnel)
        #expect(nothing.localAddress == nil && nothing.error?.contains("printed nothing") == true)
        let failed = probe.reading("error: Network is unreachable\n", tunnelAddresses: tunnel)
        #expect(failed.localAddress == nil && failed.error == "Network is unreachable")
    }
}
