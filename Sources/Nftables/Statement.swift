/// One step of a rule, in the order nft evaluates it. The cases are exactly what the
/// policy compiler needs; each has one text form and one expression encoding.
public enum NftStatement: Hashable, Sendable {
    /// `meta mark & mask == value` (or `!=`).
    case markMatch(mask: UInt32, value: UInt32, negated: Bool)
    /// `oifname "name"` (or `!=`): by name, so it holds for an interface that is
    /// deleted and re-created with a new index.
    case outputInterfaceName(String, negated: Bool)
    /// `iifname "name"` (or `!=`): where a forwarded packet came in.
    case inputInterfaceName(String, negated: Bool)
    /// `iifname vmap @map`: one lookup by the interface a packet came in on (a map of
    /// `NftSetKeyType.interfaceName`), however many interfaces there are.
    case inputInterfaceVerdictMap(map: String)
    /// `oifname vmap @map`: the same by the interface a packet leaves on.
    case outputInterfaceVerdictMap(map: String)
    /// `meta mark set meta mark & ~clear | set`: touches only the bits under `clear`.
    case setMark(clear: UInt32, set: UInt32)
    /// `counter name "x"`: a reference to a named counter object.
    case namedCounter(String)
    /// `ct mark set ct mark & ~clear | set`: the connection remembers the profile.
    case setConntrackMark(clear: UInt32, set: UInt32)
    /// `socket cgroupv2 level L vmap @map`.
    case cgroupVerdictMap(level: UInt32, map: String)
    /// `socket cgroupv2 level L "path"` (or `!=`): the socket's ancestor at level L is
    /// this cgroup (the key carries the id the kernel compares and the path nft prints).
    case cgroupMatch(level: UInt32, cgroup: NftElementKey, negated: Bool)
    /// `socket cgroupv2 level L @set` (or `!= @set`).
    case cgroupInSet(level: UInt32, set: String, negated: Bool)
    /// `ct mark & mask == value` (or `!=`).
    case conntrackMarkMatch(mask: UInt32, value: UInt32, negated: Bool)
    /// `ct state new`: the first packet of a connection (or of a flow conntrack saw first).
    case conntrackStateNew
    /// `ip daddr @set` / `ip6 daddr @set` (or `!=`): IPv4 or IPv6 packets only.
    case destinationInSet(ipv4: Bool, set: String, negated: Bool)
    /// `ip saddr @set` / `ip6 saddr @set` (or `!=`): IPv4 or IPv6 packets only.
    case sourceInSet(ipv4: Bool, set: String, negated: Bool)
    /// `ip daddr vmap @map` / `ip6 daddr vmap @map`.
    case destinationVerdictMap(ipv4: Bool, map: String)
    /// `meta l4proto udp th dport 53` (or tcp).
    case destinationPort(NftTransport, UInt16)
    /// `redirect to :PORT`: to the host itself (127.0.0.1 or ::1), that port (nat hooks).
    case redirect(port: UInt16)
    /// `meta mark & mask vmap @map`.
    case markVerdictMap(mask: UInt32, map: String)
    /// `ct mark & mask vmap @map`.
    case conntrackMarkVerdictMap(mask: UInt32, map: String)
    /// `socket mark == value` (or `!=`): the mark the socket itself carries (SO_MARK, which
    /// needs CAP_NET_ADMIN), whatever rules did to the packet's.
    case socketMarkMatch(value: UInt32, negated: Bool)
    /// `meta l4proto N`.
    case transportProtocol(UInt8)
    /// `tcp flags & (syn | ack) == syn` (or `!= syn`): a TCP packet that opens a connection
    /// (SYN without ACK), told from the header alone, where no conntrack state is kept.
    /// Either way it matches TCP packets only (`!= syn` is a TCP packet that does not open a
    /// connection, never a UDP one), so it serves as the TCP match `reject with tcp reset` needs.
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
    /// `fib saddr . oif type local` (or `!= local`): the packet's source address is one of
    /// the output interface's own (a socket born marked chose it from the interface's
    /// table, so source NAT would change nothing).
    case sourceIsOutputInterfaceAddress(negated: Bool)
    case masquerade
    /// `reject with tcp reset` (after a TCP match) or `reject with icmpx port-unreachable`:
    /// the packet is dropped and its sender told at once, so a refused connection fails
    /// with "connection refused" instead of waiting for a timeout.
    case reject(NftReject)
    case verdict(NftVerdict)
}

public enum NftReject: Hashable, Sendable {
    /// A TCP reset to the sender; only for TCP packets (nft wants a TCP match before it).
    case tcpReset
    /// ICMP port unreachable for IPv4, ICMPv6 port unreachable for IPv6 (nft's icmpx).
    case portUnreachable
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
        case let .cgroupVerdictMap(_, map), let .destinationVerdictMap(_, map), let .markVerdictMap(_, map),
             let .conntrackMarkVerdictMap(_, map), let .inputInterfaceVerdictMap(map), let .outputInterfaceVerdictMap(map):
            return .set(map)
        case let .cgroupInSet(_, set, _), let .destinationInSet(_, set, _), let .sourceInSet(_, set, _),
             let .sourcePortInSet(_, set), let .destinationPortInSet(_, set), let .socketUserInSet(set): return .set(set)
        case let .verdict(.jump(chain)), let .verdict(.goto(chain)): return .chain(chain)
        default: return nil
        }
    }
}

public enum NftTransport: String, Hashable, Sendable {
    case tcp, udp

    /// The IP protocol number.
    public var number: UInt8 { self == .tcp ? 6 : 17 }
}
