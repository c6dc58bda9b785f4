import Routing
import Addresses
import CNetlink
import Glibc

/// The rtnetlink edge: policy rules, routes in our tables, links and addresses.
public final class Rtnetlink {
    let netlink: NetlinkSocket

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_ROUTE)
        netlink.setReceiveTimeout(seconds: 10)
        // Lets the kernel filter route dumps by table instead of sending every route.
        var on: Int32 = 1
        _ = setsockopt(netlink.fileDescriptor, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    // MARK: rules

    public func rules(ipv4: Bool) throws -> [RoutingRule] {
        let message = NetlinkMessage(type: UInt16(RTM_GETRULE), flags: 0)
        message.putFamilyHeader(fib_rule_hdr(family: family(ipv4), dst_len: 0, src_len: 0, tos: 0, table: 0, res1: 0, res2: 0, action: 0, flags: 0))
        return try netlink.dump(message, operation: "list \(ipv4 ? "ipv4" : "ipv6") rules").map { reply in
            let header = reply.familyHeader(as: fib_rule_hdr.self)
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<fib_rule_hdr>.size)
            return RoutingRule(
                ipv4: ipv4,
                priority: attributes.u32(UInt16(cint(FRA_PRIORITY))) ?? 0,
                mark: attributes.u32(UInt16(cint(FRA_FWMARK))) ?? 0,
                mask: attributes.u32(UInt16(cint(FRA_FWMASK))) ?? 0,
                table: attributes.u32(UInt16(cint(FRA_TABLE))) ?? UInt32(header.table),
                protocolNumber: attributes.u8(UInt16(cint(FRA_PROTOCOL))) ?? 0,
                invert: header.flags & Self.fibRuleInvert != 0,
                suppressPrefixLength: attributes.u32(UInt16(cint(FRA_SUPPRESS_PREFIXLEN))).flatMap { $0 == UInt32.max ? nil : $0 },
                action: Int(header.action) == Int(cint(FR_ACT_GOTO)) ? .goto(priority: attributes.u32(UInt16(cint(FRA_GOTO))) ?? 0)
                    : Int(header.action) == Int(cint(FR_ACT_NOP)) ? .nop
                    : Int(header.action) == Int(cint(FR_ACT_PROHIBIT)) ? .prohibit : .lookup,
                inputInterface: attributes.string(UInt16(cint(FRA_IIFNAME))),
                ipProtocol: attributes.u8(UInt16(cint(FRA_IP_PROTO))),
                sourcePorts: attributes.value(UInt16(cint(FRA_SPORT_RANGE)), as: fib_rule_port_range.self).flatMap(Self.ports),
                destinationPorts: attributes.value(UInt16(cint(FRA_DPORT_RANGE)), as: fib_rule_port_range.self).flatMap(Self.ports),
                uidRange: attributes.value(UInt16(cint(FRA_UID_RANGE)), as: fib_rule_uid_range.self).flatMap(Self.uids))
        }
    }

    // The kernel checks start <= end before it takes a range; a reply that breaks that is
    // dropped rather than trapping in ClosedRange.
    private static func ports(_ range: fib_rule_port_range) -> ClosedRange<UInt16>? {
        range.start <= range.end ? range.start...range.end : nil
    }

    private static func uids(_ range: fib_rule_uid_range) -> ClosedRange<UInt32>? {
        range.start <= range.end ? range.start...range.end : nil
    }

    public func add(_ rule: RoutingRule) throws {
        try netlink.perform(ruleMessage(rule, type: RTM_NEWRULE, flags: NLM_F_CREATE | NLM_F_EXCL), operation: "add \(rule)")
    }

    public func delete(_ rule: RoutingRule) throws {
        try netlink.perform(ruleMessage(rule, type: RTM_DELRULE, flags: 0), operation: "delete \(rule)")
    }

    /// FIB_RULE_INVERT from linux/fib_rules.h.
    static let fibRuleInvert: UInt32 = 0x2

    private func ruleMessage(_ rule: RoutingRule, type: Int, flags: Int32) -> NetlinkMessage {
        let message = NetlinkMessage(type: UInt16(type), flags: flags)
        var header = fib_rule_hdr(family: family(rule.ipv4), dst_len: 0, src_len: 0, tos: 0, table: UInt8(cint(RT_TABLE_UNSPEC)), res1: 0, res2: 0,
                                  action: UInt8(cint(FR_ACT_TO_TBL)), flags: rule.invert ? Self.fibRuleInvert : 0)
        switch rule.action {
        case .lookup: break
        case .goto: header.action = UInt8(cint(FR_ACT_GOTO))
        case .nop: header.action = UInt8(cint(FR_ACT_NOP))
        case .prohibit: header.action = UInt8(cint(FR_ACT_PROHIBIT))
        }
        message.putFamilyHeader(header)
        message.put(UInt16(cint(FRA_PRIORITY)), u32: rule.priority)
        if rule.mask != 0 {
            message.put(UInt16(cint(FRA_FWMARK)), u32: rule.mark)
            message.put(UInt16(cint(FRA_FWMASK)), u32: rule.mask)
        }
        if let length = rule.suppressPrefixLength { message.put(UInt16(cint(FRA_SUPPRESS_PREFIXLEN)), u32: length) }
        if let name = rule.inputInterface { message.put(UInt16(cint(FRA_IIFNAME)), string: name) }
        if let ipProtocol = rule.ipProtocol { message.put(UInt16(cint(FRA_IP_PROTO)), u8: ipProtocol) }
        if let ports = rule.sourcePorts {
            message.put(UInt16(cint(FRA_SPORT_RANGE)), value: fib_rule_port_range(start: ports.lowerBound, end: ports.upperBound))
        }
        if let ports = rule.destinationPorts {
            message.put(UInt16(cint(FRA_DPORT_RANGE)), value: fib_rule_port_range(start: ports.lowerBound, end: ports.upperBound))
        }
        if let uids = rule.uidRange {
            message.put(UInt16(cint(FRA_UID_RANGE)), value: fib_rule_uid_range(start: uids.lowerBound, end: uids.upperBound))
        }
        switch rule.action {
        case .lookup: message.put(UInt16(cint(FRA_TABLE)), u32: rule.table)
        case let .goto(target): message.put(UInt16(cint(FRA_GOTO)), u32: target)
        case .nop, .prohibit: break
        }
        message.put(UInt16(cint(FRA_PROTOCOL)), u8: rule.protocolNumber)
        return message
    }

    // MARK: routes

    /// Routes of one table, or of every table (nil); of one protocol, or of any (nil). The
    /// kernel filters the dump (strict checking): a table of learned routes costs nothing
    /// to a reader of the others' protocol.
    public func routes(ipv4: Bool, table: UInt32?, protocolNumber: UInt8? = nil) throws -> [Route] {
        let message = NetlinkMessage(type: UInt16(RTM_GETROUTE), flags: 0)
        message.putFamilyHeader(rtmsg(rtm_family: family(ipv4), rtm_dst_len: 0, rtm_src_len: 0, rtm_tos: 0,
                                      rtm_table: 0, rtm_protocol: protocolNumber ?? 0, rtm_scope: 0, rtm_type: 0, rtm_flags: 0))
        if let table { message.put(UInt16(cint(RTA_TABLE)), u32: table) }
        let operation = "list routes of " + (table.map { "table \($0)" } ?? "every table")
        return try netlink.dump(message, operation: operation).compactMap { reply -> Route? in
            guard let route = Self.route(reply), table == nil || route.table == table,
                  protocolNumber == nil || route.protocolNumber == protocolNumber else { return nil }
            return route
        }
    }

    /// A route as a dump or an event (RTM_NEWROUTE, RTM_DELROUTE) states it; nil for kinds
    /// we never make.
    static func route(_ reply: NetlinkReply) -> Route? {
        let header = reply.familyHeader(as: rtmsg.self)
        let attributes = reply.attributes(familyHeaderSize: MemoryLayout<rtmsg>.size)
        let ipv4 = Int32(header.rtm_family) == AF_INET
        let address = attributes[UInt16(cint(RTA_DST))].flatMap { IPAddress(bytes: $0) } ?? (ipv4 ? .v4(0) : .v6(0, 0))
        guard let destination = IPPrefix(address: address, length: Int(header.rtm_dst_len)) else { return nil }
        let kind: Route.Kind
        switch Int(header.rtm_type) {
        case Int(cint(RTN_UNREACHABLE)): kind = .unreachable
        case Int(cint(RTN_BLACKHOLE)): kind = .blackhole
        case Int(cint(RTN_THROW)): kind = .fallThrough
        case Int(cint(RTN_LOCAL)):
            guard let index = attributes.u32(UInt16(cint(RTA_OIF))),
                  let source = attributes[UInt16(cint(RTA_PREFSRC))].flatMap({ IPAddress(bytes: $0) }) else { return nil }
            kind = .local(index: Int32(bitPattern: index), source: source)
        case Int(cint(RTN_UNICAST)):
            guard let index = attributes.u32(UInt16(cint(RTA_OIF))) else { return nil }
            kind = .device(index: Int32(bitPattern: index))
        default: return nil
        }
        return Route(destination: destination, table: attributes.u32(UInt16(cint(RTA_TABLE))) ?? UInt32(header.rtm_table), kind: kind,
                     metric: attributes.u32(UInt16(cint(RTA_PRIORITY))) ?? 0, protocolNumber: header.rtm_protocol)
    }

    public func add(_ route: Route) throws {
        try netlink.perform(routeMessage(route, type: RTM_NEWROUTE, flags: NLM_F_CREATE | NLM_F_EXCL), operation: "add route \(route)")
    }

    public func delete(_ route: Route) throws {
        try netlink.perform(routeMessage(route, type: RTM_DELROUTE, flags: 0), operation: "delete route \(route)")
    }

    private func routeMessage(_ route: Route, type: Int, flags: Int32) -> NetlinkMessage {
        let message = NetlinkMessage(type: UInt16(type), flags: flags)
        let ipv4 = route.destination.isIPv4
        var header = rtmsg(rtm_family: family(ipv4), rtm_dst_len: UInt8(route.destination.length), rtm_src_len: 0, rtm_tos: 0,
                           rtm_table: UInt8(cint(RT_TABLE_UNSPEC)), rtm_protocol: route.protocolNumber,
                           rtm_scope: UInt8(cint(RT_SCOPE_UNIVERSE)), rtm_type: UInt8(cint(RTN_UNICAST)), rtm_flags: 0)
        switch route.kind {
        case .device:
            // A gateway-less route out of a point-to-point device is link scope (as `ip` makes it).
            if ipv4 { header.rtm_scope = UInt8(cint(RT_SCOPE_LINK)) }
        case .unreachable:
            header.rtm_type = UInt8(cint(RTN_UNREACHABLE))
        case .blackhole:
            header.rtm_type = UInt8(cint(RTN_BLACKHOLE))
        case .fallThrough:
            header.rtm_type = UInt8(cint(RTN_THROW))
        case .local:
            header.rtm_type = UInt8(cint(RTN_LOCAL))
            header.rtm_scope = UInt8(cint(RT_SCOPE_HOST))
        }
        message.putFamilyHeader(header)
        message.put(UInt16(cint(RTA_TABLE)), u32: route.table)
        if route.destination.length > 0 {
            message.put(UInt16(cint(RTA_DST)), bytes: route.destination.network.address.bytes)
        }
        message.put(UInt16(cint(RTA_PRIORITY)), u32: route.metric)
        switch route.kind {
        case let .device(index):
            message.put(UInt16(cint(RTA_OIF)), u32: UInt32(bitPattern: index))
        case let .local(index, source):
            message.put(UInt16(cint(RTA_OIF)), u32: UInt32(bitPattern: index))
            message.put(UInt16(cint(RTA_PREFSRC)), bytes: source.bytes)
        default: break
        }
        return message
    }

    // MARK: links

    /// The interface with this name, or nil when there is none.
    public func link(named name: String) throws -> Link? {
        let message = NetlinkMessage(type: UInt16(RTM_GETLINK), flags: 0)
        message.putFamilyHeader(ifinfomsg())
        message.put(UInt16(cint(IFLA_IFNAME)), string: name)
        do {
            return try netlink.request(message, operation: "get link \(name)").compactMap(Self.decodeLink).first
        } catch let error as NetlinkError where error.code == ENODEV {
            return nil
        }
    }

    public func links() throws -> [Link] {
        let message = NetlinkMessage(type: UInt16(RTM_GETLINK), flags: 0)
        message.putFamilyHeader(ifinfomsg())
        return try netlink.dump(message, operation: "list links").compactMap(Self.decodeLink)
    }

    static func decodeLink(_ reply: NetlinkReply) -> Link? {
        guard reply.type == UInt16(RTM_NEWLINK) else { return nil }
        let header = reply.familyHeader(as: ifinfomsg.self)
        let attributes = reply.attributes(familyHeaderSize: MemoryLayout<ifinfomsg>.size)
        guard let name = attributes.string(UInt16(cint(IFLA_IFNAME))) else { return nil }
        var statistics = Link.Statistics()
        if let raw = attributes[UInt16(cint(IFLA_STATS64))], raw.count >= MemoryLayout<rtnl_link_stats64>.size {
            let stats = raw.withUnsafeBytes { $0.loadUnaligned(as: rtnl_link_stats64.self) }
            statistics.rxPackets = UInt64(stats.rx_packets)
            statistics.txPackets = UInt64(stats.tx_packets)
            statistics.rxBytes = UInt64(stats.rx_bytes)
            statistics.txBytes = UInt64(stats.tx_bytes)
            statistics.rxDropped = UInt64(stats.rx_dropped)
            statistics.txDropped = UInt64(stats.tx_dropped)
        }
        let flags = header.ifi_flags
        var link = Link(index: header.ifi_index, name: name,
                        isUp: flags & UInt32(cint(IFF_UP)) != 0,
                        isRunning: flags & UInt32(0x10000) /* IFF_LOWER_UP */ != 0 || flags & UInt32(cint(IFF_RUNNING)) != 0,
                        mtu: attributes.u32(UInt16(cint(IFLA_MTU))) ?? 0,
                        statistics: statistics, ipv6: ipv6IsOn(attributes))
        link.kind = attributes.nested(UInt16(cint(IFLA_LINKINFO)))?.string(UInt16(cint(IFLA_INFO_KIND)))
        link.master = attributes.u32(UInt16(cint(IFLA_MASTER))).map { Int32(bitPattern: $0) }
        if let peer = attributes.u32(UInt16(cint(IFLA_LINK))).map({ Int32(bitPattern: $0) }), peer != header.ifi_index {
            link.peerIndex = peer
            link.peerNamespace = attributes.u32(UInt16(cint(IFLA_LINK_NETNSID))).map { Int32(bitPattern: $0) }
        }
        return link
    }

    /// The interface's IPv6 settings (IFLA_AF_SPEC, AF_INET6, IFLA_INET6_CONF: one s32 per
    /// setting, in the kernel's DEVCONF_ order) say `disable_ipv6` is 0. A kernel without
    /// IPv6 sends none: off.
    static func ipv6IsOn(_ attributes: NetlinkAttributes) -> Bool {
        // DEVCONF_DISABLE_IPV6 of linux/ipv6.h, whose other declarations clash with glibc's.
        let disableIPv6 = 26
        guard let conf = attributes.nested(UInt16(cint(IFLA_AF_SPEC)))?.nested(UInt16(AF_INET6))?[UInt16(cint(IFLA_INET6_CONF))],
              conf.count >= (disableIPv6 + 1) * 4 else { return false }
        return conf.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: disableIPv6 * 4, as: Int32.self) } == 0
    }

    /// Deletes an interface.
    public func deleteLink(index: Int32) throws {
        let message = NetlinkMessage(type: UInt16(RTM_DELLINK), flags: 0)
        var header = ifinfomsg()
        header.ifi_index = index
        message.putFamilyHeader(header)
        try netlink.perform(message, operation: "delete link #\(index)")
    }

    /// Brings an interface up or down and, if given, sets its MTU.
    public func setLink(index: Int32, up: Bool, mtu: UInt32? = nil) throws {
        let message = NetlinkMessage(type: UInt16(RTM_NEWLINK), flags: 0)
        var header = ifinfomsg()
        header.ifi_index = index
        header.ifi_change = UInt32(cint(IFF_UP))
        header.ifi_flags = up ? UInt32(cint(IFF_UP)) : 0
        message.putFamilyHeader(header)
        if let mtu { message.put(UInt16(cint(IFLA_MTU)), u32: mtu) }
        try netlink.perform(message, operation: "set link #\(index) \(up ? "up" : "down")")
    }

    // MARK: addresses

    public func addresses() throws -> [InterfaceAddress] {
        let message = NetlinkMessage(type: UInt16(RTM_GETADDR), flags: 0)
        message.putFamilyHeader(ifaddrmsg())
        return try netlink.dump(message, operation: "list addresses").compactMap(Self.decodeAddress)
    }

    static func decodeAddress(_ reply: NetlinkReply) -> InterfaceAddress? {
        let header = reply.familyHeader(as: ifaddrmsg.self)
        let attributes = reply.attributes(familyHeaderSize: MemoryLayout<ifaddrmsg>.size)
        let bytes = attributes[UInt16(cint(IFA_LOCAL))] ?? attributes[UInt16(cint(IFA_ADDRESS))]
        guard let address = bytes.flatMap({ IPAddress(bytes: $0) }),
              let prefix = IPPrefix(address: address, length: Int(header.ifa_prefixlen)) else { return nil }
        return InterfaceAddress(interfaceIndex: Int32(bitPattern: header.ifa_index), prefix: prefix)
    }

    /// Adds an address (no-op if it is already there).
    public func add(_ address: InterfaceAddress) throws {
        try netlink.perform(addressMessage(address, type: RTM_NEWADDR, flags: NLM_F_CREATE | NLM_F_REPLACE),
                            operation: "add address \(address.prefix) to #\(address.interfaceIndex)")
    }

    public func delete(_ address: InterfaceAddress) throws {
        try netlink.perform(addressMessage(address, type: RTM_DELADDR, flags: 0),
                            operation: "delete address \(address.prefix) from #\(address.interfaceIndex)")
    }

    private func addressMessage(_ address: InterfaceAddress, type: Int, flags: Int32) -> NetlinkMessage {
        let message = NetlinkMessage(type: UInt16(type), flags: flags)
        // No duplicate address detection: nothing else can hold such an address, and until
        // it ended the address could not be a route's source.
        message.putFamilyHeader(ifaddrmsg(ifa_family: family(address.prefix.isIPv4), ifa_prefixlen: UInt8(address.prefix.length),
                                          ifa_flags: address.prefix.isIPv4 ? 0 : UInt8(IFA_F_NODAD), ifa_scope: 0,
                                          ifa_index: UInt32(bitPattern: address.interfaceIndex)))
        let bytes = address.prefix.address.bytes
        message.put(UInt16(cint(IFA_LOCAL)), bytes: bytes)
        message.put(UInt16(cint(IFA_ADDRESS)), bytes: bytes)
        return message
    }

    private func family(_ ipv4: Bool) -> UInt8 { UInt8(ipv4 ? AF_INET : AF_INET6) }
}
