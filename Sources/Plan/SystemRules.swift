import Nftables
import Policy

/// System mode (lockdown, `[system] profile`): every process that is in no profile's
/// cgroup and not in the bypass slice is a member of the system profile, with its
/// killswitch, DNS and exceptions. Each hook's chain ends with the system profile where it
/// would otherwise let the packet go its own way. What stays out, and why:
/// - a socket that carries a mark of its own (SO_MARK needs CAP_NET_ADMIN or CAP_NET_RAW,
///   which could set the bypass mark anyway): a tunnel's own socket (wg's `fwmark`,
///   OpenVPN's `--mark`, the built-in engine's bypass mark) and vpnd's sockets;
/// - what keeps the host on its link: ICMPv6 neighbour discovery and MLD, IGMP, the DHCP
///   and DHCPv6 client's exchange. Only the kernel or a privileged process (raw sockets,
///   ports below 1024) can send these, and none of them leaves the link.
/// Anything else is the system profile's, also packets the kernel sends without a full
/// socket (a TCP reset, an ICMP error): they go into the tunnel or are dropped.
enum SystemRules {
    /// Output: after every other decision of the route chain.
    static func output(_ system: Profile, policy: Policy) -> [NftRule] {
        let mask = policy.routing.markMask, bypass = policy.routing.bypassMark
        return [
            NftRule([.socketMarkMatch(value: 0, negated: true), .setConntrackMark(clear: mask, set: bypass), .verdict(.accept)],
                    comment: "system mode: a socket marked by privileged software (a tunnel's own) is not the system profile's"),
        ] + link(sending: true) + [
            NftRule([.verdict(.jump(ExceptionRules.entryChain(system, in: policy)))], comment: "system mode: everything else is profile \(system.name)'s"),
        ]
    }

    /// Input: new connections to sockets no profile map placed, and to no socket at all.
    static func inbound(_ system: Profile) -> [NftRule] {
        TransportRules.inbound()
            + [NftRule([.conntrackStateNew, .socketMarkMatch(value: 0, negated: true), .verdict(.accept)])]
            + link(sending: false)
            + [NftRule([.conntrackStateNew, .verdict(.jump(ProfileObjectNames(system.name).listenChain))],
                       comment: "system mode: profile \(system.name)'s listeners")]
    }

    /// DNS redirect (nat output): the system profile's members ask its proxy; vpnd's own
    /// queries to the profile's resolvers carry the profile's mark and leave.
    static func dns(_ system: Profile) -> [NftRule] {
        [
            NftRule([.socketMarkMatch(value: 0, negated: true), .verdict(.accept)]),
            NftRule([.verdict(.jump(ProfileObjectNames(system.name).dnsChain))], comment: "system mode: profile \(system.name)'s proxy"),
        ]
    }

    /// The link's own protocols, accepted unmarked in either direction.
    private static func link(sending: Bool) -> [NftRule] {
        // Client and server ports of DHCP and DHCPv6.
        let dhcp: [(name: String, client: UInt16, server: UInt16)] = [("DHCP", 68, 67), ("DHCPv6", 546, 547)]
        return [
            NftRule([.icmpv6Types(130...137), .verdict(.accept)], comment: "MLD and neighbour discovery"),
            NftRule([.icmpv6Types(143...143), .verdict(.accept)], comment: "MLDv2 reports"),
            NftRule([.transportProtocol(2), .verdict(.accept)], comment: "IGMP"),
        ] + dhcp.map { protocolName, client, server in
            NftRule([sending ? .udpPorts(source: client, destination: server) : .udpPorts(source: server, destination: client), .verdict(.accept)],
                    comment: protocolName)
        }
    }
}
