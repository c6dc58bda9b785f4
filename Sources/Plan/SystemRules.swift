import Nftables
import Policy

/// System mode (lockdown, `[system] profile`): every process that is in no profile's
/// cgroup and not in the bypass slice is a member of the system profile, with its
/// killswitch, DNS and exceptions. Its sockets are not born marked (the root cgroup holds
/// vpnd's and the tunnel daemons' sockets too): a socket with no mark at all is the system
/// profile's. Routing sends such a socket's lookups to the system profile's table
/// (RoutingPlan's system rule), so its source is the tunnel's from the first lookup; the
/// root cgroup's DNS programs send its port-53 queries to the system profile's proxy
/// (SocketProgramPlan); the killswitch and the input hook hold what is not born
/// in the tunnel. What stays out, and why:
/// - a socket that carries a mark of its own (SO_MARK needs CAP_NET_ADMIN or CAP_NET_RAW,
///   which could set the bypass mark anyway): a tunnel's own socket (wg's `fwmark`,
///   OpenVPN's `--mark`, the built-in engine's bypass mark) and vpnd's sockets;
/// - a profile tunnel's own transport, by its port and owner (TransportRules);
/// - what keeps the host on its link: ICMPv6 neighbour discovery and MLD, IGMP, the DHCP
///   and DHCPv6 client's exchange. Only the kernel or a privileged process (raw sockets,
///   ports below 1024) can send these, and none of them leaves the link.
/// Anything else is the system profile's, also packets the kernel sends without a full
/// socket (a TCP reset, an ICMP error): they go into the tunnel or are dropped.
enum SystemRules {
    static let egressChain = "system_egress"
    static let listenChain = "system_listen"
    /// Client and server ports of DHCP and DHCPv6.
    static let dhcpPorts: [(client: UInt16, server: UInt16)] = [(68, 67), (546, 547)]

    /// Postrouting, after the marks: a packet with no mark at all is the system profile's.
    static func egress(_ system: Profile, policy: Policy) -> [NftRule] {
        [NftRule([.markMatch(mask: .max, value: 0, negated: false), .verdict(.jump(egressChain))],
                 comment: "system mode: no mark at all, profile \(system.name)'s")]
    }

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        guard let system = policy.systemProfile else { return }
        let names = ProfileObjectNames(system.name)
        let transport: [NftStatement] = [.sourcePortInSet(.udp, set: TransportRules.portsSet), .socketUserInSet(TransportRules.ownersSet)]
        table.chains += [
            NftChain(name: egressChain, rules: [NftRule(transport + [.verdict(.accept)], comment: "a profile tunnel's own transport")]
                + link(sending: true) + [NftRule([.verdict(.goto(names.egressChain))])]),
            NftChain(name: listenChain, rules: link(sending: false) + [NftRule([.verdict(.goto(names.listenChain))])]),
        ]
    }

    /// Input, after the profiles' listeners: a socket without a mark is the system profile's.
    static func inbound(_ system: Profile) -> [NftRule] {
        [NftRule([.socketMarkMatch(value: 0, negated: false), .verdict(.jump(listenChain))],
                 comment: "system mode: profile \(system.name)'s listeners")]
    }

    /// The link's own protocols, unmarked, in either direction (ICMPv6 arrives through the
    /// input hook's ICMP rule).
    private static func link(sending: Bool) -> [NftRule] {
        var rules = [NftRule([.transportProtocol(2), .verdict(.accept)], comment: "IGMP")]
        if sending {
            rules += [
                NftRule([.icmpv6Types(130...137), .verdict(.accept)], comment: "MLD and neighbour discovery"),
                NftRule([.icmpv6Types(143...143), .verdict(.accept)], comment: "MLDv2 reports"),
            ]
        }
        return rules + dhcpPorts.map { client, server in
            NftRule([sending ? .udpPorts(source: client, destination: server) : .udpPorts(source: server, destination: client), .verdict(.accept)],
                    comment: client == 68 ? "DHCP" : "DHCPv6")
        }
    }
}
