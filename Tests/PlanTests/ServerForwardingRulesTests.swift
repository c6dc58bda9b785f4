import NetTestSupport
import Nftables
import Plan
import Testing

@Suite(.serialized) struct ServerForwardingRulesTests {
    @Test func rendersOneMasqueradeRuleForTheTunnelsClients() {
        let text = NftTextRenderer().render(ServerForwardingRules.table(interface: "wgs0"))
        #expect(text.contains("table inet vpn_server_wgs0 {"))
        #expect(text.contains("type nat hook postrouting priority srcnat"))
        #expect(text.contains("iifname \"wgs0\" oifname != \"wgs0\" masquerade"))
    }

    @Test func nftAcceptsIt() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let namespace = try NetworkNamespace("vx\(uniqueTag())sf", cleanup: cleanup)
        let text = NftTextRenderer().render(ServerForwardingRules.table(interface: "wgs0"))
        try NftCLI.apply(text, in: namespace, checkOnly: true)
    }
}
