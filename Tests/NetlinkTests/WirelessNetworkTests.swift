import Netlink
import Testing

/// nl80211 where there is none (no cfg80211, or an interface that is not wireless): no SSID,
/// no error. Reading a real SSID needs Wi-Fi, which these machines have not.
@Suite struct WirelessNetworkTests {
    @Test func anInterfaceThatIsNotWirelessHasNoSSID() throws {
        let wireless = try WirelessNetwork()
        #expect(wireless.ssid(interfaceIndex: 1) == nil, "loopback")
        #expect(wireless.ssid(interfaceIndex: 999_999) == nil, "no such interface")
    }
}
