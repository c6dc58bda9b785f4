import Monotonic
import Plan
import Routing
import ServiceSupport
import Testing
@testable import Tunnels

/// A tunnel's own transport as a facts read finds it, at the read's time: a built-in
/// tunnel's from vpnd's engines, another's holders looked for on the clock the test steps.
@Suite struct TunnelTransportSourceTests {
    typealias Inspector = TunnelHolderCacheTests.Inspector
    let start = MonotonicInstant.seconds(1000)
    func at(_ ms: UInt64) -> MonotonicInstant { start + .milliseconds(ms) }
    let tun = Link(index: 7, name: "tun0", isUp: true, isRunning: true, mtu: 1500)
    /// No `wg` socket is served here.
    static let noSockets = "/nonexistent/vpnexec-test"

    func source(ask: ((Int32) -> [UInt8]?)?) -> TunnelTransportSource {
        TunnelTransportSource(tunnels: BuiltInTunnels(log: Log(minimum: .error), uapiDirectory: Self.noSockets),
                              wireguardDirectory: Self.noSockets, holders: TunnelHolderCache(), ask: ask)
    }

    @Test func aBuiltInTunnelsTransportIsVpndsOwnWithoutAsking() {
        let inspector = Inspector()
        let transport = source(ask: inspector.ask).transport(of: "wg0", link: tun, builtIn: ["wg0"], now: at(0))
        #expect(transport.source == .builtIn && transport.detail == "not running")
        #expect(inspector.asked.isEmpty, "nothing looked through for vpnd's own")
    }

    @Test func anotherTunnelsHoldersAreLookedForAtTheReadsTime() {
        let inspector = Inspector()
        let source = source(ask: inspector.ask)
        let first = source.transport(of: "tun0", link: tun, builtIn: ["wg0"], now: at(0))
        #expect(first.source == .unknown && first.detail?.contains("no process of this host holds the device") == true, "\(first)")
        _ = source.transport(of: "tun0", link: tun, builtIn: ["wg0"], now: at(9_999))
        #expect(inspector.asked == [0], "within 10 s of the given time: not looked through again")
        _ = source.transport(of: "tun0", link: tun, builtIn: ["wg0"], now: at(10_000))
        #expect(inspector.asked == [0, 0])
        let blind = self.source(ask: nil).transport(of: "tun0", link: tun, builtIn: [], now: at(0))
        #expect(blind.detail?.contains("vpnd cannot look into processes") == true, "\(blind)")
    }
}
