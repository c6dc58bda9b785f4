import Addresses
import Nftables
import Policy
import Routing
import SocketPrograms

/// A member's DNS, UDP and TCP, to any address, reaches its profile's proxy by routing,
/// not by rewriting addresses. A rule for the profile's mark, the transport and port 53
/// selects the profile's DNS table, whose one route a family is `local 0.0.0.0/0 dev lo
/// src 127.77.0.I` and `local ::/0 dev lo src fd7f:4d::I` (I: the profile's index): the
/// query is delivered on this host, from an address that names the profile, and vpnd's
/// network-namespace program (`DNSSteering`, sk_lookup) hands it to vpnd's steering socket
/// of its family and transport, which passes it to the profile's proxy by that address. An
/// IPv6 route's source must be an address of the host: each served profile's is on `lo`
/// (`addresses`). The proxy answers from the address asked, so the member's resolver sees
/// its answer come from the server it asked; nothing is rewritten in the member's socket.
///
/// Port 53 is the only port a steered query goes to, and what receives it is vpnd's socket
/// or nothing: with vpnd gone (its program goes with it) the input hook refuses a steered
/// query for any socket but a proxy's (`steeredQueryGuards`), so no other process on the
/// host, whatever port it holds, answers a member's query. (Older vpnds rewrote a member's
/// TCP queries to a proxy on 127.0.0.1 at an unprivileged port, which any local user could
/// hold while vpnd was not listening.)
///
/// Why not the cgroup sendmsg and recvmsg programs that did this before: once one is
/// attached anywhere, the kernel takes the socket lock at every unconnected UDP send and
/// every receive of every process on the host, a tunnel daemon's encrypted datagrams
/// included, in its one sending thread (bench/member-cost). Routing costs a member's
/// query one rule lookup and costs the tunnel's datagrams the rules they pass.
///
/// The rules (the same for IPv4 and IPv6; for UDP and TCP each), by priority:
///
///     0  no mark at all (system mode): the system profile's DNS table
///     1  none of our marks: goto 3 (the tunnel's datagrams skip the members' rules, where
///        there are two or more: `RoutingRule.skipPays`)
///     2  a profile's mark, without the proxy's bit: the profile's DNS table
///     3  the local table (the kernel's rule, moved here from 0 while these exist)
///
/// The kernel's `lookup local` rule must come after them: a query to 127.0.0.53 or to the
/// host's own address would otherwise be delivered to whatever listens there. The proxy's
/// own queries upstream carry the profile's mark and `proxyMark`, which rule 2 compares:
/// they go on to the profile's table and into the tunnel. Port 853 over UDP (DNS over QUIC)
/// is `prohibit` where EncryptedDNSRules refuses it: a send fails at once with EACCES (over
/// TCP the connect program refuses it). Only locally made packets match (`iif lo`), and a
/// routed container's queries by the veth they arrive on (ContainerRules).
public enum DNSRouting {
    static let udp: UInt8 = 17, tcp: UInt8 = 6

    enum Priority {
        static let system: UInt32 = 0, skip: UInt32 = 1, members: UInt32 = 2, local: UInt32 = 3
    }

    /// The kernel's table of local addresses, and the rule that looks it up.
    public static let localTable: UInt32 = 255
    public static let kernelLocalPriority: UInt32 = 0

    /// The address the profile's queries come from, which names it to the steering program.
    public static func steeringAddress(_ profile: Profile, ipv6: Bool) -> IPAddress {
        DNSSteering.address(of: profile.index, ipv6: ipv6)
    }

    /// The profiles whose members' DNS goes to their proxy (not one that stepped aside on a
    /// trusted network).
    static func served(_ policy: Policy, facts: RuntimeFacts) -> [Profile] {
        policy.profiles.filter { SocketProgramPlan.servesDNS($0, facts: facts) }
    }

    public static func rules(_ policy: Policy, facts: RuntimeFacts) -> [RoutingRule] {
        let served = served(policy, facts: facts)
        guard !served.isEmpty else { return [] }
        return [true, false].flatMap { rules(policy, served: served, facts: facts, ipv4: $0) }
    }

    static func rules(_ policy: Policy, served: [Profile], facts: RuntimeFacts, ipv4: Bool) -> [RoutingRule] {
        let routing = policy.routing
        func query(_ priority: UInt32, mark: UInt32, mask: UInt32, _ transport: UInt8, port: UInt16, _ action: RoutingRule.Action, table: UInt32 = 0) -> RoutingRule {
            RoutingRule(ipv4: ipv4, priority: priority, mark: mark, mask: mask, table: table, protocolNumber: vpnexecRouteProtocol,
                        action: action, inputInterface: "lo", ipProtocol: transport, destinationPorts: port...port)
        }
        func queries(_ profile: Profile, _ priority: UInt32, mark: UInt32, mask: UInt32) -> [RoutingRule] {
            [udp, tcp].map { query(priority, mark: mark, mask: mask, $0, port: 53, .lookup, table: profile.dnsTable) }
                + (EncryptedDNSRules.refuses(profile, in: policy) ? [query(priority, mark: mark, mask: mask, udp, port: EncryptedDNSRules.port, .prohibit)] : [])
        }
        // A routed container's queries, UDP and TCP, as they arrive on its veth (ContainerRules).
        let containers = served.flatMap { profile in
            ContainerRules.interfaces(of: profile, facts: facts).flatMap { interface in
                [udp, tcp].map { transport in
                    RoutingRule(ipv4: ipv4, priority: Priority.members, mark: profile.mark.value, mask: routing.markMask | routing.proxyMark,
                                table: profile.dnsTable, protocolNumber: vpnexecRouteProtocol, inputInterface: interface, ipProtocol: transport, destinationPorts: 53...53)
                }
            }
        }
        let members = served.flatMap { queries($0, Priority.members, mark: $0.mark.value, mask: routing.markMask | routing.proxyMark) } + containers
        var rules = [movedLocalRule(ipv4: ipv4)] + members
        if RoutingRule.skipPays(over: members.count, landingOnNop: false) {
            rules.insert(RoutingRule(ipv4: ipv4, priority: Priority.skip, mark: 0, mask: routing.markMask, table: 0, protocolNumber: vpnexecRouteProtocol,
                                     action: .goto(priority: Priority.local)), at: 0)
        }
        if let system = policy.systemProfile, served.contains(where: { $0.name == system.name }) {
            rules += queries(system, Priority.system, mark: 0, mask: UInt32.max)
        }
        return rules
    }

    /// The kernel's `lookup local` rule of a family, where it stands without us; and ours,
    /// after the DNS rules.
    public static func kernelLocalRule(ipv4: Bool) -> RoutingRule {
        RoutingRule(ipv4: ipv4, priority: kernelLocalPriority, mark: 0, mask: 0, table: localTable, protocolNumber: 2 /* RTPROT_KERNEL */)
    }

    public static func movedLocalRule(ipv4: Bool) -> RoutingRule {
        RoutingRule(ipv4: ipv4, priority: Priority.local, mark: 0, mask: 0, table: localTable, protocolNumber: vpnexecRouteProtocol)
    }

    /// What arrives on `lo` from a steering address (InboundRules' loopback chain goes
    /// here for those and accepts the rest): the only way in for a steered query.
    static let steeredChain = "steered_dns"

    static func steeredQueries(_ policy: Policy) -> (rules: [NftRule], chain: NftChain) {
        let rules = [false, true].map { ipv6 in NftRule([.sourceNetwork(DNSSteering.prefix(ipv6: ipv6)), .verdict(.goto(steeredChain))]) }
        return (rules, NftChain(name: steeredChain, rules: steeredQueryGuards(policy)))
    }

    /// A query routed from a steering address is for a proxy's socket, which carries
    /// `proxyMark`. Any other socket the lookup finds (a resolver on 127.0.0.53:53 or bound
    /// to 0.0.0.0:53 while vpnd and its steering program are gone: before it starts, after
    /// `vpnd --oneshot`, while it restarts) does not get it, nor does what it would forward
    /// leave outside the tunnel; and where no socket is found at all (no proxy runs) the
    /// sender is told at once. A TCP query is reset: the kernel's own reset for a port
    /// nobody holds is not sent from an address the host does not have (192.0.2.53), so
    /// the client would wait out its connect. A UDP one is answered port unreachable (which
    /// the kernel can send from the host's own addresses only; to another the client waits
    /// out its timeout, and none leaves either way). The accepted connections of a proxy
    /// inherit its mark, and a handshake's last ACK meets no full socket and no SYN rule.
    static func steeredQueryGuards(_ policy: Policy) -> [NftRule] {
        [
            NftRule([.socketMarkMatch(value: policy.routing.proxyMark, negated: false), .verdict(.accept)], comment: "for a proxy's socket"),
            NftRule([.tcpSynWithoutAck(negated: false), .reject(tcpReset: true)], comment: "a member's TCP DNS query that no proxy takes"),
            NftRule([.transportProtocol(DNSRouting.udp), .reject(tcpReset: false)], comment: "a member's UDP DNS query that no proxy takes"),
            NftRule([.verdict(.accept)]),
        ]
    }

    /// Metric 1, not 0: IPv6 stores 0 as 1024, and the applier would not know its own route.
    /// With IPv6 off on `lo` (no steering address can be there, nor a local route through
    /// it) a member's IPv6 query is refused at once (unreachable): its resolver goes on to
    /// its next server, and no query passes the proxy and its domain rules. At metric 2: the
    /// kernel takes one IPv6 route a destination and metric, so when IPv6 comes back on the
    /// local route is added beside it before it goes.
    public static func routes(_ policy: Policy, facts: RuntimeFacts) -> [Route] {
        let loopback = facts.links["lo"]?.index ?? 1
        return served(policy, facts: facts).flatMap { profile in
            [true, false].map { ipv4 in
                let steered = ipv4 || facts.loopbackIPv6
                return Route(destination: .defaultRoute(ipv4: ipv4), table: profile.dnsTable,
                             kind: steered ? .local(index: loopback, source: steeringAddress(profile, ipv6: !ipv4)) : .unreachable,
                             metric: steered ? 1 : 2, protocolNumber: vpnexecRouteProtocol)
            }
        }
    }

    /// The served profiles' IPv6 steering addresses, on `lo` (127.77.0.0/16 is there by
    /// itself): the only addresses vpnd adds to an interface it did not make. Any other
    /// address of fd7f:4d::/112 on `lo` is a profile's that went, and is removed.
    public static func addresses(_ policy: Policy, facts: RuntimeFacts) -> [InterfaceAddress] {
        let loopback = facts.links["lo"]?.index ?? 1
        guard facts.loopbackIPv6 else { return [] }
        return served(policy, facts: facts).map { profile in
            InterfaceAddress(interfaceIndex: loopback, prefix: IPPrefix(address: steeringAddress(profile, ipv6: true), length: 128)!)
        }
    }
}
