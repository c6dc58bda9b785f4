import CNetlink
import Glibc

/// The Wi-Fi network (SSID) an interface is associated with, from nl80211 over generic
/// netlink: the family's id is looked up by name, then the interface asked for
/// (NL80211_CMD_GET_INTERFACE reports NL80211_ATTR_SSID while a station is associated).
/// A host without cfg80211, an interface that is not wireless or not associated: nil.
public final class WirelessNetwork {
    private let netlink: NetlinkSocket
    private var family: UInt16?

    public init() throws {
        netlink = try NetlinkSocket(bus: NETLINK_GENERIC)
        netlink.setReceiveTimeout(seconds: 2)
    }

    public func ssid(interfaceIndex: Int32) -> String? {
        guard let family = nl80211Family() else { return nil }
        let message = NetlinkMessage(type: family, flags: 0)
        message.putFamilyHeader(genlmsghdr(cmd: UInt8(cint(NL80211_CMD_GET_INTERFACE)), version: 0, reserved: 0))
        message.put(UInt16(cint(NL80211_ATTR_IFINDEX)), u32: UInt32(bitPattern: interfaceIndex))
        guard let replies = try? netlink.request(message, operation: "nl80211 get interface") else { return nil }
        for reply in replies where reply.type == family {
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<genlmsghdr>.size)
            if let bytes = attributes[UInt16(cint(NL80211_ATTR_SSID))], !bytes.isEmpty {
                return String(decoding: bytes, as: UTF8.self)
            }
        }
        return nil
    }

    /// nl80211's id, once known; looked up again while it is missing (cfg80211 may load
    /// later), at most once per call.
    private func nl80211Family() -> UInt16? {
        if let family { return family }
        let message = NetlinkMessage(type: UInt16(GENL_ID_CTRL), flags: 0)
        message.putFamilyHeader(genlmsghdr(cmd: UInt8(cint(CTRL_CMD_GETFAMILY)), version: 1, reserved: 0))
        message.put(UInt16(cint(CTRL_ATTR_FAMILY_NAME)), string: "nl80211")
        guard let replies = try? netlink.request(message, operation: "look up nl80211") else { return nil }
        for reply in replies {
            let attributes = reply.attributes(familyHeaderSize: MemoryLayout<genlmsghdr>.size)
            if let bytes = attributes[UInt16(cint(CTRL_ATTR_FAMILY_ID))], bytes.count >= 2 {
                family = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) }
            }
        }
        return family
    }
}
