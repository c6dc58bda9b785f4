import Addresses
import CNetlink
import Glibc

/// The path the kernel picks for one packet (`ip route get DEST mark M`): the interface it
/// leaves by, the gateway, and the source address it would carry.
public struct RouteLookup: Hashable, Sendable {
    public var interfaceIndex: Int32
    public var gateway: IPAddress?
    public var source: IPAddress?

    public init(interfaceIndex: Int32, gateway: IPAddress?, source: IPAddress?) {
        self.interfaceIndex = interfaceIndex
        self.gateway = gateway
        self.source = source
    }
}

extension Rtnetlink {
    /// The route a packet to `destination` with `mark` takes, sent by a socket of `uid` (for
    /// rules that match a uid range; nil: the caller's); nil when there is none (network or
    /// host unreachable).
    public func lookup(_ destination: IPAddress, mark: UInt32?, uid: UInt32? = nil) throws -> RouteLookup? {
        let message = NetlinkMessage(type: UInt16(RTM_GETROUTE), flags: 0)
        var header = rtmsg()
        header.rtm_family = UInt8(destination.isIPv4 ? AF_INET : AF_INET6)
        header.rtm_dst_len = destination.isIPv4 ? 32 : 128
        message.putFamilyHeader(header)
        message.put(UInt16(cint(RTA_DST)), bytes: destination.bytes)
        if let mark { message.put(UInt16(cint(RTA_MARK)), u32: mark) }
        if let uid { message.put(UInt16(cint(RTA_UID)), u32: uid) }
        let replies: [NetlinkReply]
        do {
            replies = try netlink.request(message, operation: "look up the route to \(destination)")
        } catch let error as NetlinkError where [ENETUNREACH, EHOSTUNREACH, EINVAL].contains(error.code) {
            return nil
        }
        for reply in replies where reply.type == UInt16(RTM_NEWROUTE) {
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<rtmsg>.size)
            guard let index = attributes.u32(UInt16(cint(RTA_OIF))) else { continue }
            return RouteLookup(interfaceIndex: Int32(bitPattern: index),
                               gateway: attributes[UInt16(cint(RTA_GATEWAY))].flatMap { IPAddress(bytes: $0) },
                               source: attributes[UInt16(cint(RTA_PREFSRC))].flatMap { IPAddress(bytes: $0) })
        }
        return nil
    }
}
