import Addresses
import CNetlink
import Glibc

/// The kernel's connection tracking table (ctnetlink, what `conntrack -G` asks): one exact
/// lookup of a connection by the tuple its replies have, for what the kernel's rules did to
/// it. CAP_NET_ADMIN.
public final class Conntrack {
    private let netlink: NetlinkSocket

    /// nfnetlink_conntrack.h and nf_conntrack_common.h, which the module's headers leave out.
    private enum Attribute {
        static let originalTuple: UInt16 = 1, replyTuple: UInt16 = 2, status: UInt16 = 3
        static let tupleIP: UInt16 = 1, tupleProtocol: UInt16 = 2
        static let ipv4Source: UInt16 = 1, ipv4Destination: UInt16 = 2, ipv6Source: UInt16 = 3, ipv6Destination: UInt16 = 4
        static let protocolNumber: UInt16 = 1, sourcePort: UInt16 = 2, destinationPort: UInt16 = 3
    }
    private static let getConnection = UInt16(NFNL_SUBSYS_CTNETLINK << 8) | 1
    /// IPS_SRC_NAT: a rule translated its source.
    private static let sourceTranslated: UInt32 = 1 << 4

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_NETFILTER)
        netlink.setReceiveTimeout(seconds: 2)
    }

    /// A tracked TCP connection as its replies see it: from `source` to `destination`.
    public struct Entry: Hashable, Sendable {
        /// Where it came from before any translation.
        public var originalSource: IPAddress?
        /// A rule translated its source (SNAT, masquerade).
        public var sourceTranslated: Bool

        public init(originalSource: IPAddress?, sourceTranslated: Bool) {
            self.originalSource = originalSource
            self.sourceTranslated = sourceTranslated
        }
    }

    /// The TCP connection whose replies go from `source` to `destination` (a local socket's
    /// own address and port, and its peer's as that socket sees it); nil where the kernel
    /// tracks none.
    public func tcpConnection(replyFrom source: IPAddress, port sourcePort: UInt16, to destination: IPAddress, port destinationPort: UInt16) throws -> Entry? {
        guard source.isIPv4 == destination.isIPv4 else { return nil }
        let message = NetlinkMessage(type: Self.getConnection, flags: 0)
        message.putFamilyHeader(nfgenmsg(nfgen_family: UInt8(source.isIPv4 ? AF_INET : AF_INET6), version: UInt8(NFNETLINK_V0), res_id: 0))
        message.nest(Attribute.replyTuple) {
            message.nest(Attribute.tupleIP) {
                message.put(source.isIPv4 ? Attribute.ipv4Source : Attribute.ipv6Source, bytes: source.bytes)
                message.put(source.isIPv4 ? Attribute.ipv4Destination : Attribute.ipv6Destination, bytes: destination.bytes)
            }
            message.nest(Attribute.tupleProtocol) {
                message.put(Attribute.protocolNumber, u8: UInt8(IPPROTO_TCP))
                message.put(Attribute.sourcePort, bytes: [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xff)])
                message.put(Attribute.destinationPort, bytes: [UInt8(destinationPort >> 8), UInt8(destinationPort & 0xff)])
            }
        }
        let replies: [NetlinkReply]
        do {
            replies = try netlink.request(message, operation: "look up a tracked connection")
        } catch let error as NetlinkError where error.code == ENOENT {
            return nil
        }
        guard let reply = replies.first else { return nil }
        let attributes = reply.attributes(familyHeaderSize: MemoryLayout<nfgenmsg>.size)
        let status = attributes.u32(Attribute.status).map { UInt32(bigEndian: $0) } ?? 0
        let ip = attributes.nested(Attribute.originalTuple)?.nested(Attribute.tupleIP)
        let original = (ip?[Attribute.ipv4Source] ?? ip?[Attribute.ipv6Source]).flatMap { IPAddress(bytes: $0) }
        return Entry(originalSource: original, sourceTranslated: status & Self.sourceTranslated != 0)
    }
}
