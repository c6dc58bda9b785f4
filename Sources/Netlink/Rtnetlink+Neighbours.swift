import Addresses
import CNetlink
import Glibc

/// The main table's default route: where unmarked traffic leaves, and through which gateway.
public struct DefaultRoute: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var gateway: IPAddress?
    public var metric: UInt32

    public init(interfaceIndex: Int32, gateway: IPAddress?, metric: UInt32) {
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
        self.metric = metric
    }
}

/// One neighbour table entry with a link-layer address.
public struct Neighbour: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var address: IPAddress
    /// Six bytes for Ethernet and Wi-Fi.
    public var linkLayerAddress: [UInt8]
    /// NUD_* (REACHABLE, STALE, PERMANENT...).
    public var state: UInt16

    /// An entry whose address the kernel has (or had) confirmed: not INCOMPLETE nor FAILED.
    public var isUsable: Bool {
        state & UInt16(NUD_INCOMPLETE | NUD_FAILED) == 0 && !linkLayerAddress.isEmpty
    }
}

extension Rtnetlink {
    /// The default routes of the main table, lowest metric first (RTA_MULTIPATH routes
    /// are left out: their gateway is not one).
    public func defaultRoutes(ipv4: Bool) throws -> [DefaultRoute] {
        let main = UInt32(cint(RT_TABLE_MAIN))
        let message = NetlinkMessage(type: UInt16(RTM_GETROUTE), flags: 0)
        message.putFamilyHeader(rtmsg(rtm_family: UInt8(ipv4 ? AF_INET : AF_INET6), rtm_dst_len: 0, rtm_src_len: 0, rtm_tos: 0,
                                      rtm_table: 0, rtm_protocol: 0, rtm_scope: 0, rtm_type: 0, rtm_flags: 0))
        message.put(UInt16(cint(RTA_TABLE)), u32: main)
        return try netlink.dump(message, operation: "list default routes").compactMap { reply -> DefaultRoute? in
            let header = reply.familyHeader(as: rtmsg.self)
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<rtmsg>.size)
            guard header.rtm_dst_len == 0, Int(header.rtm_type) == Int(cint(RTN_UNICAST)),
                  (attributes.u32(UInt16(cint(RTA_TABLE))) ?? UInt32(header.rtm_table)) == main,
                  let index = attributes.u32(UInt16(cint(RTA_OIF))) else { return nil }
            return DefaultRoute(interfaceIndex: Int32(bitPattern: index),
                                gateway: attributes[UInt16(cint(RTA_GATEWAY))].flatMap { IPAddress(bytes: $0) },
                                metric: attributes.u32(UInt16(cint(RTA_PRIORITY))) ?? 0)
        }.sorted { $0.metric < $1.metric }
    }

    /// The neighbour table of one interface.
    public func neighbours(ipv4: Bool, interfaceIndex: Int32) throws -> [Neighbour] {
        let message = NetlinkMessage(type: UInt16(RTM_GETNEIGH), flags: 0)
        var header = ndmsg()
        header.ndm_family = UInt8(ipv4 ? AF_INET : AF_INET6)
        message.putFamilyHeader(header)
        // With strict checking the header's index must be 0; the attribute filters.
        message.put(UInt16(cint(NDA_IFINDEX)), u32: UInt32(bitPattern: interfaceIndex))
        return try netlink.dump(message, operation: "list neighbours").compactMap { reply -> Neighbour? in
            let header = reply.familyHeader(as: ndmsg.self)
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<ndmsg>.size)
            // Without strict checking the kernel ignores the filter and sends every interface's.
            guard header.ndm_ifindex == interfaceIndex,
                  let address = attributes[UInt16(cint(NDA_DST))].flatMap({ IPAddress(bytes: $0) }) else { return nil }
            return Neighbour(interfaceIndex: header.ndm_ifindex, address: address,
                             linkLayerAddress: attributes[UInt16(cint(NDA_LLADDR))] ?? [], state: header.ndm_state)
        }
    }

    /// Asks the kernel to resolve a neighbour it has no entry for (NTF_USE: as if a packet
    /// were sent to it; the kernel sends its ARP or neighbour solicitation, nothing else).
    public func resolveNeighbour(_ address: IPAddress, interfaceIndex: Int32) throws {
        let message = NetlinkMessage(type: UInt16(RTM_NEWNEIGH), flags: NLM_F_CREATE | NLM_F_REPLACE)
        var header = ndmsg()
        header.ndm_family = UInt8(address.isIPv4 ? AF_INET : AF_INET6)
        header.ndm_ifindex = interfaceIndex
        header.ndm_flags = UInt8(NTF_USE)
        header.ndm_state = UInt16(NUD_NONE)
        message.putFamilyHeader(header)
        message.put(UInt16(cint(NDA_DST)), bytes: address.bytes)
        try netlink.perform(message, operation: "resolve neighbour \(address)")
    }
}
