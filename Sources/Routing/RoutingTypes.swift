import Addresses
import HexDigits

// Routing state as values: what the planner wants and what rtnetlink reads back.

/// `ip rule`: packets whose mark matches under the mask (and every other selector that is
/// set) look up `table` (or, by `action`, go on at another priority, or do nothing).
///
/// The daemon reconciles by comparing these values with what rtnetlink reads back, so each
/// field holds exactly what the kernel reports: a selector the kernel would not echo (an
/// empty interface name, protocol 0) is stored as nil.
public struct RoutingRule: Hashable, Sendable, CustomStringConvertible {
    public enum Action: Hashable, Sendable {
        /// `lookup TABLE`.
        case lookup
        /// `goto PRIORITY`: matching packets skip the rules before it (`table` is 0).
        case goto(priority: UInt32)
        /// `nop`: does nothing; a goto's target (`table` is 0).
        case nop
        /// `prohibit`: the lookup fails with EACCES (a send or connect is refused at once).
        case prohibit
    }

    public var ipv4: Bool
    public var priority: UInt32
    public var mark: UInt32
    public var mask: UInt32
    public var table: UInt32
    /// Who installed it (rtm_protocol); ours carry the daemon's protocol number.
    public var protocolNumber: UInt8
    /// `not fwmark ...`: the rule applies to packets whose mark does not match.
    public var invert: Bool
    /// `suppress_prefixlength N`: ignore routes from the table with prefixes this short or
    /// shorter (wg-quick's "main table, but not its default route").
    public var suppressPrefixLength: UInt32?
    public var action: Action
    /// `iif NAME`: packets that came in on this interface. "lo" selects locally generated
    /// packets: output route lookups carry the loopback interface as their input.
    public var inputInterface: String?
    /// `ipproto N`: packets of this IP protocol (6 TCP, 17 UDP, 58 ICMPv6...).
    public var ipProtocol: UInt8?
    /// `sport A-B`: TCP/UDP/SCTP source ports. The kernel takes 1...65534 only.
    public var sourcePorts: ClosedRange<UInt16>?
    /// `dport A-B`: destination ports, as `sourcePorts`.
    public var destinationPorts: ClosedRange<UInt16>?
    /// `uidrange A-B`: packets of sockets owned by these users (0...0: root's).
    public var uidRange: ClosedRange<UInt32>?

    /// A mask of 0 matches every packet (no fwmark selector).
    public init(ipv4: Bool, priority: UInt32, mark: UInt32, mask: UInt32, table: UInt32, protocolNumber: UInt8,
                invert: Bool = false, suppressPrefixLength: UInt32? = nil, action: Action = .lookup,
                inputInterface: String? = nil, ipProtocol: UInt8? = nil, sourcePorts: ClosedRange<UInt16>? = nil,
                destinationPorts: ClosedRange<UInt16>? = nil, uidRange: ClosedRange<UInt32>? = nil) {
        self.action = action
        self.ipv4 = ipv4
        self.priority = priority
        self.mark = mark
        self.mask = mask
        self.table = table
        self.protocolNumber = protocolNumber
        self.invert = invert
        self.suppressPrefixLength = suppressPrefixLength
        // The kernel keeps "" and 0 but reports neither (both mean "any"): as nil, the value
        // read back equals the one added.
        self.inputInterface = inputInterface.flatMap { $0.isEmpty ? nil : $0 }
        self.ipProtocol = ipProtocol.flatMap { $0 == 0 ? nil : $0 }
        self.sourcePorts = sourcePorts
        self.destinationPorts = destinationPorts
        self.uidRange = uidRange
    }

    public var description: String {
        let selector = mask == 0 ? "all" : "\(invert ? "not " : "")fwmark \(hex(mark))/\(hex(mask))"
        // The other selectors in the order and words of `ip rule show`.
        var selectors = ""
        if let inputInterface { selectors += " iif \(inputInterface)" }
        if let uidRange { selectors += " uidrange \(uidRange.lowerBound)-\(uidRange.upperBound)" }
        if let ipProtocol { selectors += " ipproto \(ipProtocol)" }
        if let sourcePorts { selectors += " sport \(Self.ports(sourcePorts))" }
        if let destinationPorts { selectors += " dport \(Self.ports(destinationPorts))" }
        let suppress = suppressPrefixLength.map { " suppress_prefixlength \($0)" } ?? ""
        let what: String
        switch action {
        case .lookup: what = "lookup \(table)"
        case let .goto(target): what = "goto \(target)"
        case .nop: what = "nop"
        case .prohibit: what = "prohibit"
        }
        return "\(ipv4 ? "ipv4" : "ipv6") rule \(priority): \(selector)\(selectors) \(what)\(suppress) proto \(protocolNumber)"
    }

    /// `ip rule` writes a one-port range as the port alone.
    private static func ports(_ range: ClosedRange<UInt16>) -> String {
        range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)-\(range.upperBound)"
    }
}

/// A route in a table: to an interface, or a dead end of last resort.
public struct Route: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        /// Out of the interface with this index, no gateway (a point-to-point tunnel).
        case device(index: Int32)
        case unreachable
        case blackhole
        /// RTN_THROW (`ip route add throw`): the lookup leaves this table and goes on with
        /// the next rule, as if the table had no route for the destination.
        case fallThrough
        /// RTN_LOCAL through the interface (loopback): delivered on this host, whatever
        /// the destination, with `source` as the address a socket routed here gets.
        case local(index: Int32, source: IPAddress)
    }

    public var destination: IPPrefix
    public var table: UInt32
    public var kind: Kind
    public var metric: UInt32
    public var protocolNumber: UInt8

    public init(destination: IPPrefix, table: UInt32, kind: Kind, metric: UInt32, protocolNumber: UInt8) {
        self.destination = destination
        self.table = table
        self.kind = kind
        self.metric = metric
        self.protocolNumber = protocolNumber
    }

    public var description: String {
        let what: String
        switch kind {
        case let .device(index): what = "\(destination) dev #\(index)"
        case .unreachable: what = "unreachable \(destination)"
        case .blackhole: what = "blackhole \(destination)"
        case .fallThrough: what = "throw \(destination)"
        case let .local(index, source): what = "local \(destination) dev #\(index) src \(source)"
        }
        return "\(what) table \(table) metric \(metric) proto \(protocolNumber)"
    }
}

/// What rtnetlink tells about an interface.
public struct Link: Hashable, Sendable {
    public var index: Int32
    public var name: String
    /// Administratively up (IFF_UP).
    public var isUp: Bool
    /// Carrier and operational state allow traffic (IFF_LOWER_UP or IFF_RUNNING).
    public var isRunning: Bool
    public var mtu: UInt32
    public var statistics: Statistics
    /// IPv6 is on here: the kernel has it and the interface's `disable_ipv6` is 0. Where it
    /// is off (as guides against IPv6 leaks advise, for all interfaces), the kernel refuses
    /// an IPv6 route through the interface and an IPv6 address on it.
    public var ipv6: Bool
    /// The driver's kind (IFLA_INFO_KIND: "veth", "bridge", "wireguard", "tun"); nil for a
    /// device without one (lo, a physical interface).
    public var kind: String?
    /// A veth's peer: its index in its own namespace (IFLA_LINK) and that namespace's id as
    /// this namespace numbers it (IFLA_LINK_NETNSID); nil for a peer in the same namespace.
    public var peerIndex: Int32?
    public var peerNamespace: Int32?
    /// The bridge (or bond) it is a port of (IFLA_MASTER).
    public var master: Int32?

    public struct Statistics: Hashable, Sendable {
        public var rxPackets: UInt64 = 0
        public var txPackets: UInt64 = 0
        public var rxBytes: UInt64 = 0
        public var txBytes: UInt64 = 0
        public var rxDropped: UInt64 = 0
        public var txDropped: UInt64 = 0

        public init() {}
    }

    public init(index: Int32, name: String, isUp: Bool, isRunning: Bool, mtu: UInt32, statistics: Statistics = Statistics(), ipv6: Bool = true) {
        self.index = index
        self.name = name
        self.isUp = isUp
        self.isRunning = isRunning
        self.mtu = mtu
        self.statistics = statistics
        self.ipv6 = ipv6
    }
}

/// An address on an interface.
public struct InterfaceAddress: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var prefix: IPPrefix

    public init(interfaceIndex: Int32, prefix: IPPrefix) {
        self.interfaceIndex = interfaceIndex
        self.prefix = prefix
    }
}
