import CNetlink
import Glibc

/// Connection tracking (ctnetlink), for the one thing vpnd asks of it: forgetting a
/// connection whose verdict must not stick. A tunnel's own transport that was routed into
/// the tunnel before vpnd knew its port keeps, in its connection, the profile's mark and
/// the source NAT to the tunnel's address; the route chain takes the packets out again,
/// but the NAT would still rewrite them. Deleted, the next packet starts a connection
/// decided afresh.
public final class ConntrackClient {
    private let netlink: NetlinkSocket

    // include/uapi/linux/netfilter/nfnetlink_conntrack.h
    private static let subsystem: UInt16 = 1            // NFNL_SUBSYS_CTNETLINK
    private static let get: UInt16 = 1                  // IPCTNL_MSG_CT_GET
    private static let delete: UInt16 = 2               // IPCTNL_MSG_CT_DELETE
    private static let tupleOriginal: UInt16 = 1        // CTA_TUPLE_ORIG
    private static let tupleProtocol: UInt16 = 2        // CTA_TUPLE_PROTO
    private static let protocolNumber: UInt16 = 1       // CTA_PROTO_NUM
    private static let protocolSourcePort: UInt16 = 2   // CTA_PROTO_SRC_PORT
    private static let statusAttribute: UInt16 = 3      // CTA_STATUS
    private static let markAttribute: UInt16 = 8        // CTA_MARK
    private static let zoneAttribute: UInt16 = 18       // CTA_ZONE
    private static let nested: UInt16 = 0x8000          // NLA_F_NESTED

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_NETFILTER)
        netlink.setReceiveTimeout(seconds: 2)
    }

    /// One tracked connection, as far as deciding and deleting it needs.
    struct Entry {
        var family: UInt8
        var transport: UInt8
        var sourcePort: UInt16
        var mark: UInt32
        /// Its source was rewritten (IPS_SRC_NAT): a masquerade that sticks to it.
        var sourceNAT: Bool
        /// CTA_TUPLE_ORIG's payload and CTA_ZONE's, as the kernel sent them: what names
        /// the entry in a delete.
        var tuple: [UInt8]
        var zone: [UInt8]?
    }

    /// Deletes the UDP (or TCP) connections whose original source port is in `ports` and
    /// that either had their source rewritten or carry a mark that satisfies `mark`; returns
    /// how many went (an entry gone meanwhile is not counted).
    public func delete(tcp: Bool, sourcePorts ports: Set<UInt16>, natOrMark mark: (UInt32) -> Bool) throws -> Int {
        guard !ports.isEmpty else { return 0 }
        let transport = UInt8(tcp ? IPPROTO_TCP : IPPROTO_UDP)
        var deleted = 0
        for entry in try entries() where entry.transport == transport && ports.contains(entry.sourcePort) && (entry.sourceNAT || mark(entry.mark)) {
            let message = NetlinkMessage(type: Self.subsystem << 8 | Self.delete, flags: 0)
            message.putFamilyHeader(nfgenmsg(nfgen_family: entry.family, version: UInt8(NFNETLINK_V0), res_id: 0))
            message.put(Self.tupleOriginal | Self.nested, bytes: entry.tuple)
            if let zone = entry.zone { message.put(Self.zoneAttribute, bytes: zone) }
            do {
                try netlink.perform(message, operation: "delete a tracked connection")
                deleted += 1
            } catch let error as NetlinkError where error.code == ENOENT {
                continue
            }
        }
        return deleted
    }

    /// Every tracked connection of this network namespace, both families.
    func entries() throws -> [Entry] {
        let message = NetlinkMessage(type: Self.subsystem << 8 | Self.get, flags: 0)
        message.putFamilyHeader(nfgenmsg(nfgen_family: UInt8(AF_UNSPEC), version: UInt8(NFNETLINK_V0), res_id: 0))
        netlink.reserveBuffers(bytes: 1 << 20)
        return try netlink.dump(message, operation: "list tracked connections").compactMap { reply in
            let family = reply.familyHeader(as: nfgenmsg.self).nfgen_family
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<nfgenmsg>.size)
            guard let tuple = attributes[Self.tupleOriginal],
                  let proto = NetlinkAttributes(payload: tuple).nested(Self.tupleProtocol),
                  let number = proto.u8(Self.protocolNumber) else { return nil }
            let port = proto[Self.protocolSourcePort].map { $0.count >= 2 ? UInt16($0[0]) << 8 | UInt16($0[1]) : 0 } ?? 0
            let mark = attributes.u32(Self.markAttribute).map { UInt32(bigEndian: $0) } ?? 0
            let status = attributes.u32(Self.statusAttribute).map { UInt32(bigEndian: $0) } ?? 0
            return Entry(family: family, transport: number, sourcePort: port, mark: mark, sourceNAT: status & 1 << 4 != 0,  // IPS_SRC_NAT
                         tuple: tuple, zone: attributes[Self.zoneAttribute])
        }
    }
}
