import Addresses

/// One step of a rule, in the order nft evaluates it. The cases are exactly what the
/// policy compiler needs; each has one text form and one expression encoding.
public enum NftStatement: Hashable, Sendable {
    /// `meta mark & mask == value` (or `!=`).
    case markMatch(mask: UInt32, value: UInt32, negated: Bool)
    /// `oifname "name"` (or `!=`): by name, so it holds for an interface that is
    /// deleted and re-created with a new index.
    case outputInterfaceName(String, negated: Bool)
    /// `oif "name"`: by the index the interface has now, a compare of four bytes where a
    /// name is sixteen copied for each packet. Only where the same plan routes into the
    /// interface by that index (TransportRules.unmarkedGuard): one made again with a new
    /// index gets neither those routes nor this match until a plan has both.
    case outputInterface(name: String, index: Int32)
    /// `iifname "name"` (or `!=`): where a forwarded packet came in.
    case inputInterfaceName(String, negated: Bool)
    /// `iif "name"`: by index, as `outputInterface`.
    case inputInterface(name: String, index: Int32)
    /// `iifname vmap @map`: one lookup by the interface a packet came in on (a map of
    /// `NftSetKeyType.interfaceName`), however many interfaces there are.
    case inputInterfaceVerdictMap(map: String)
    /// `oifname vmap @map`: the same by the interface a packet leaves on.
    case outputInterfaceVerdictMap(map: String)
    /// `counter name "x"`: a reference to a named counter object.
    case namedCounter(String)
    /// `socket cgroupv2 level L vmap @map`.
    case cgroupVerdictMap(level: UInt32, map: String)
    /// `ip daddr @set` / `ip6 daddr @set` (or `!=`): IPv4 or IPv6 packets only.
    case destinationInSet(ipv4: Bool, set: String, negated: Bool)
    /// `ip saddr @set` / `ip6 saddr @set` (or `!=`): IPv4 or IPv6 packets only.
    case sourceInSet(ipv4: Bool, set: String, negated: Bool)
    /// `ip saddr vmap @map` / `ip6 saddr vmap @map`.
    case sourceVerdictMap(ipv4: Bool, map: String)
    /// `ip saddr A` / `ip6 saddr A`: packets of A's family from A. A compare runs inline in
    /// nftables' rule loop, where a set lookup is a call into the set.
    case sourceAddress(IPAddress)
    /// `ip saddr N/L` / `ip6 saddr N/L`: packets of N's family from within the prefix.
    case sourceNetwork(IPPrefix)
    /// `udp sport vmap @map` / `tcp sport vmap @map`.
    case sourcePortVerdictMap(NftTransport, map: String)
    /// `meta mark & mask vmap @map`.
    case markVerdictMap(mask: UInt32, map: String)
    /// `socket mark == value` (or `!=`): the mark the socket itself carries (SO_MARK, which
    /// needs CAP_NET_ADMIN), whatever rules did to the packet's.
    case socketMarkMatch(value: UInt32, negated: Bool)
    /// `meta l4proto N`.
    case transportProtocol(UInt8)
    /// `tcp flags & (syn | ack) == syn` (or `!= syn`): a TCP packet that opens a connection
    /// (SYN without ACK), told from the header alone, where no conntrack state is kept.
    /// Either way it matches TCP packets only (`!= syn` is a TCP packet that does not open a
    /// connection, never a UDP one).
    case tcpSynWithoutAck(negated: Bool)
    /// `udp sport S udp dport D`.
    case udpPorts(source: UInt16, destination: UInt16)
    /// `udp sport @set` / `tcp sport @set`: UDP (or TCP) packets whose source port is in the set.
    case sourcePortInSet(NftTransport, set: String)
    /// `udp dport @set` / `tcp dport @set`.
    case destinationPortInSet(NftTransport, set: String)
    /// `meta skuid @set`: the packet's socket belongs to one of these users.
    case socketUserInSet(String)
    /// `icmpv6 type A-B` (or one type): IPv6 packets only.
    case icmpv6Types(ClosedRange<UInt8>)
    /// `th dport N` after `meta l4proto`: a UDP (or TCP) packet to port N.
    case destinationPort(NftTransport, UInt16)
    /// `meta mark set value`: a forwarded packet's mark, set before it is routed (the
    /// prerouting hook), as a member's socket gives its own.
    case setMark(UInt32)
    /// `masquerade`: source NAT to the output interface's address (vpn-server's forwarding).
    case masquerade
    /// `snat ip to A` / `snat ip6 to A`: packets of A's family get A as their source (where
    /// a nat chain's hook allows it: postrouting, input).
    case sourceNAT(IPAddress)
    /// `reject with tcp reset` (a TCP packet only: after a match on TCP), or `reject` (the
    /// inet family's ICMP or ICMPv6 port unreachable): the sender learns at once, where a
    /// drop leaves it to its timeouts. The reset is routed from the address the packet was
    /// sent to, whether that is the host's or not (a steered DNS query's).
    case reject(tcpReset: Bool)
    /// `reject with icmpx host-unreachable`: a TCP connect fails with "No route to host",
    /// as at an unreachable route, and a datagram's send with EPERM (a local packet's drop).
    case rejectNoRoute
    case verdict(NftVerdict)
}

/// A named object of the table that a rule uses: while a rule refers to it, the kernel
/// will not delete it.
public enum NftObjectReference: Hashable, Sendable {
    case set(String)
    case counter(String)
    case chain(String)
}

extension NftStatement {
    public var reference: NftObjectReference? {
        switch self {
        case let .namedCounter(name): return .counter(name)
        case let .cgroupVerdictMap(_, map), let .sourceVerdictMap(_, map), let .sourcePortVerdictMap(_, map),
             let .markVerdictMap(_, map), let .inputInterfaceVerdictMap(map), let .outputInterfaceVerdictMap(map):
            return .set(map)
        case let .destinationInSet(_, set, _), let .sourceInSet(_, set, _),
             let .sourcePortInSet(_, set), let .destinationPortInSet(_, set), let .socketUserInSet(set): return .set(set)
        case let .verdict(.jump(chain)), let .verdict(.goto(chain)): return .chain(chain)
        default: return nil
        }
    }
}

public enum NftTransport: String, Hashable, Sendable, CaseIterable {
    case tcp, udp

    /// The IP protocol number.
    public var number: UInt8 { self == .tcp ? 6 : 17 }
}

extension NftStatement {
    /// Loopback has index 1 in every network namespace (the kernel gives it
    /// LOOPBACK_IFINDEX, and it is never made again), so comparing its index holds as its
    /// name would, and costs a packet four bytes where the name is sixteen copied.
    public static let toLoopback = NftStatement.outputInterface(name: "lo", index: 1)
    public static let fromLoopback = NftStatement.inputInterface(name: "lo", index: 1)
}
