import Addresses
import Testing
@testable import Tunnels

/// "The network changed" for a built-in tunnel: a pure comparison of its uplinks before and
/// after an rtnetlink event.
@Suite struct UplinkChangeTests {
    let server = Endpoint(address: IPAddress("203.0.113.2")!, port: 51820)
    let wired = Uplink(interfaceIndex: 2, gateway: IPAddress("192.0.2.1"), source: IPAddress("192.0.2.10"), addresses: [IPAddress("192.0.2.10")!])

    @Test func theSameUplinkIsNoChange() {
        #expect(!UplinkChange.changed(before: [server: wired], after: [server: wired]))
    }

    @Test func aPeerFirstSeenIsNoChange() {
        #expect(!UplinkChange.changed(before: [:], after: [server: wired]))
        #expect(!UplinkChange.changed(before: [server: wired], after: [:]))
    }

    @Test func anotherInterfaceGatewayOrAddressIsAChange() {
        var wifi = wired
        wifi.interfaceIndex = 3
        var otherGateway = wired
        otherGateway.gateway = IPAddress("192.0.2.254")
        var renumbered = wired
        renumbered.source = IPAddress("192.0.2.11")
        renumbered.addresses = [IPAddress("192.0.2.11")!]
        var secondAddress = wired
        secondAddress.addresses.append(IPAddress("2001:db8::10")!)
        for after in [wifi, otherGateway, renumbered, secondAddress] {
            #expect(UplinkChange.changed(before: [server: wired], after: [server: after]), "\(after)")
        }
    }

    @Test func goingOfflineAndComingBackAreChanges() {
        #expect(UplinkChange.changed(before: [server: wired], after: [server: .offline]))
        #expect(UplinkChange.changed(before: [server: .offline], after: [server: wired]))
        #expect(!UplinkChange.changed(before: [server: .offline], after: [server: .offline]))
    }
}
