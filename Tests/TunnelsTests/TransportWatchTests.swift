import Monotonic
import Nftables
import Plan
import Policy
import Testing
import TrustedFiles
@testable import Tunnels

/// The transports' log as the part writes it: a change once, a loop at once and then at most
/// every 10 s, on a clock the test steps.
@Suite struct TransportWatchTests {
    static let policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: "[profile.work]\ntunnel.interface = \"wg0\"\n")],
                                          resolver: SystemNameResolver())
    let start = MonotonicInstant.seconds(1000)
    func at(_ ms: UInt64) -> MonotonicInstant { start + .milliseconds(ms) }
    static let loop = ProfileObjectNames("work").loopCounter

    func counters(_ packets: UInt64) -> [String: NftCounter] { [Self.loop: NftCounter(name: Self.loop, packets: packets, bytes: packets * 100)] }

    @Test func aTransportIsLoggedWhenItChangesNotWhenOnlyItsDetailDoes() {
        var watch = TransportWatch()
        var transport = TunnelTransport(source: .wireguardSocket, udpPort: 51820, owner: 0, detail: "asked")
        let first = watch.follow(Self.policy, transports: ["wg0": transport], counters: nil, now: at(0))
        #expect(first.map(\.text) == ["tunnel wg0 (profile work): transport udp 51820 (wg-socket, uid 0); kept out of every profile"])
        transport.detail = "busy"
        #expect(watch.follow(Self.policy, transports: ["wg0": transport], counters: nil, now: at(1000)).isEmpty)
        transport.udpPort = 51821
        #expect(watch.follow(Self.policy, transports: ["wg0": transport], counters: nil, now: at(2000)).count == 1)
        #expect(watch.known["wg0"]?.udpPort == 51821)
    }

    /// Drops at 1 s are logged then; those that go on are logged again at 11 s (not at 10.999),
    /// with the packets since the last line.
    @Test func aLoopIsLoggedAtOnceThenAtMostEveryTenSeconds() {
        var watch = TransportWatch()
        let transports = ["wg0": TunnelTransport(source: .wireguardSocket, udpPort: 51820)]
        _ = watch.follow(Self.policy, transports: transports, counters: counters(0), now: at(0))
        let first = watch.follow(Self.policy, transports: transports, counters: counters(3), now: at(1000))
        #expect(first.count == 1 && first[0].level == .warning)
        #expect(first[0].text.hasPrefix("loop: tunnel wg0 (profile work): 3 packets of its own transport dropped before entering it (3 in all)"), "\(first)")
        #expect(watch.follow(Self.policy, transports: transports, counters: counters(5), now: at(2000)).isEmpty)
        #expect(watch.follow(Self.policy, transports: transports, counters: counters(9), now: at(10_999)).isEmpty)
        let again = watch.follow(Self.policy, transports: transports, counters: counters(12), now: at(11_000))
        #expect(again.map(\.level) == [.warning] && again[0].text.contains(": 9 packets of its own transport dropped before entering it (12 in all)"), "\(again)")
        // Nothing new dropped: nothing said, however long it has been.
        #expect(watch.follow(Self.policy, transports: transports, counters: counters(12), now: at(60_000)).isEmpty)
    }

    @Test func statusShowsTheTransportAndItsLoopCounter() throws {
        let status = try #require(TransportWatch.status(Self.policy.profiles[0], transports: ["wg0": TunnelTransport(source: .builtIn, udpPort: 40000, fwmark: 0x100)],
                                                        counters: counters(7)))
        #expect(status.source == "built-in" && status.udpPort == 40000 && status.fwmark == "0x100" && status.loopDropped.packets == 7)
        #expect(TransportWatch.status(Self.policy.profiles[0], transports: [:], counters: counters(7)) == nil)
    }
}
