import CNetlink
import Descriptors
import Glibc
import Routing

/// Wakes the daemon when links, addresses, routes or rules change, so that a tunnel interface that
/// appears, goes down or comes back, or a route of ours that someone deleted, is
/// reconciled without a restart. It only says "something changed": the daemon re-reads
/// the state it cares about, which also covers events lost to a full socket buffer.
public final class RoutingMonitor {
    private let socket: NetlinkSocket
    /// Routes of these protocols come and go without being news: the daemon's learned
    /// routes, added before each DNS answer is sent (a full re-read for each would make
    /// every answer wait for it).
    private let quietProtocols: Set<UInt8>
    /// Routes of the quiet protocols deleted since the last take; nil once events were lost.
    private var deletedQuiet: [Route]?
    private let keepsDeletions: Bool

    /// `keepingDeletions`: whether the quiet protocols' deletions are kept for
    /// `takeDeletedQuietRoutes` (a reader that only asks whether anything changed does not).
    public init(ignoringRoutesOf quietProtocols: Set<UInt8> = [], keepingDeletions: Bool = true) throws {
        self.quietProtocols = quietProtocols
        deletedQuiet = keepingDeletions ? [] : nil
        keepsDeletions = keepingDeletions
        let groups = UInt32(RTMGRP_LINK) | UInt32(RTMGRP_IPV4_ROUTE) | UInt32(RTMGRP_IPV6_ROUTE)
            | UInt32(RTMGRP_IPV4_IFADDR) | UInt32(RTMGRP_IPV6_IFADDR)
            | UInt32(RTMGRP_IPV4_RULE) | (1 << (UInt32(cint(RTNLGRP_IPV6_RULE)) - 1))
        socket = try NetlinkSocket(bus: NETLINK_ROUTE, groups: groups)
        let fd = socket.fileDescriptor
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// For poll().
    public var fileDescriptor: DescriptorNumber { DescriptorNumber(borrowing: socket.fileDescriptor) }

    /// Reads every pending event; true if anything (or an overflow) happened.
    public func drain() -> Bool {
        var changed = false
        while true {
            do {
                for event in try socket.receive(operation: "read routing events") {
                    guard isQuiet(event) else { changed = true; continue }
                    if keepsDeletions, event.type == UInt16(RTM_DELROUTE), let route = Rtnetlink.route(event) { deletedQuiet?.append(route) }
                }
            } catch let error as NetlinkError {
                // ENOBUFS: events were lost; the caller's full re-read covers them.
                if error.code == ENOBUFS { changed = true; deletedQuiet = nil; continue }
                return changed
            } catch {
                return changed
            }
        }
    }

    /// The quiet protocols' routes that were deleted (by anyone: someone's `ip route del`,
    /// a flush, the daemon itself) since the last call, as `drain()` read them; nil if
    /// events were lost meanwhile, so which is unknown. The daemon puts back the learned
    /// routes it still wants: they are not news, but their loss is.
    public func takeDeletedQuietRoutes() -> [Route]? {
        defer { if keepsDeletions { deletedQuiet = [] } }
        return deletedQuiet
    }

    private func isQuiet(_ event: NetlinkReply) -> Bool {
        guard event.type == UInt16(RTM_NEWROUTE) || event.type == UInt16(RTM_DELROUTE) else { return false }
        return quietProtocols.contains(event.familyHeader(as: rtmsg.self).rtm_protocol)
    }
}
