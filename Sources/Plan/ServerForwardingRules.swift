import Nftables

/// The nft table `vpn-server` installs as a listening peer: what its clients send out of the
/// tunnel to the rest of the world leaves with the uplink's address (masquerade on whatever
/// interface the route picks), so the server needs no knowledge of its uplink's name.
public enum ServerForwardingRules {
    public static func tableName(interface: String) -> String { "vpn_server_\(interface)" }

    public static func table(interface: String) -> NftTable {
        NftTable(family: .inet, name: tableName(interface: interface), chains: [
            NftChain(name: "source_nat", base: NftBaseChain(kind: .nat, hook: .postrouting, priority: NftBaseChain.srcnat), rules: [
                NftRule([.inputInterfaceName(interface, negated: false), .outputInterfaceName(interface, negated: true), .masquerade],
                        comment: "clients of \(interface) leave with the uplink's address"),
            ]),
        ])
    }
}
