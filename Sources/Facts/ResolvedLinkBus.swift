import CSystemd
import Glibc
import Monotonic
import Plan

/// systemd-resolved's DNS servers for one link, asked over the system bus: Manager.GetLink
/// for the link's object, then its `DNSEx` (or `DNS`, for a resolved that has no `DNSEx`).
/// For the link record resolved keeps in a directory only its user may open: any process may
/// read these properties. A thin edge: the values are parsed by LinkResolvers.busServers.
///
/// The calls are synchronous on a connection of this reader's own, and all of one read
/// together wait `deadline` at most; resolved is never started by them (no auto-start). A
/// resolved that did not answer in time is not asked again for `pause`: meanwhile a link
/// keeps what resolved last answered for it. Not thread-safe: one caller at a time (vpnd's
/// loop, vpnctl).
public final class ResolvedLinkBus: @unchecked Sendable {
    public static let deadline: Duration = .milliseconds(250)
    public static let pause: Duration = .seconds(30)

    private var bus: OpaquePointer?
    private var pausedUntil: MonotonicInstant?
    private var last: [Int32: [LinkResolvers.BusServer]] = [:]
    /// A D-Bus address ("unix:path=..."); nil: the system bus.
    private let address: String?

    public init(address: String? = nil) {
        self.address = address
    }

    // Closed without flushing: sd_bus_flush waits for the peer without a deadline.
    deinit {
        if let bus { sd_bus_close_unref(bus) }
    }

    /// The link's servers as resolved holds them, or nil: no system bus, resolved not on it,
    /// no such link, or no answer in time (then what it answered last, if anything).
    public func servers(link: Int32) -> [LinkResolvers.BusServer]? {
        let start = MonotonicInstant.now()
        if let pausedUntil, start < pausedUntil { return last[link] }
        pausedUntil = nil
        let end = start + Self.deadline
        func left() -> UInt64 {
            let now = MonotonicInstant.now()
            return now < end ? max(1, UInt64(end.since(now) / .microseconds(1))) : 1
        }
        guard let bus = connection(left) else { return pausedUntil == nil ? nil : last[link] }
        defer {
            // What arrived besides the replies (the bus's NameAcquired, a late reply) is dropped.
            while sd_bus_process(bus, nil) > 0 {}
        }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        var r = vx_resolved_get_link(bus, link, left(), &error, &reply)
        guard r >= 0, let linkReply = reply else { return failed(r, link: link) }
        defer { sd_bus_message_unref(linkReply) }
        var pathPointer: UnsafePointer<CChar>?
        guard sd_bus_message_read_basic(linkReply, Int8(UInt8(ascii: "o")), &pathPointer) >= 0, let pathPointer else { return nil }
        for (name, extended) in [("DNSEx", true), ("DNS", false)] {
            sd_bus_error_free(&error)
            reply = nil
            r = vx_resolved_get_servers(bus, pathPointer, name, left(), &error, &reply)
            // An error reply (no such property in an older resolved): the next name.
            if r < 0, sd_bus_error_is_set(&error) != 0, name == "DNSEx" { continue }
            guard r >= 0, let serversReply = reply else { return failed(r, link: link) }
            defer { sd_bus_message_unref(serversReply) }
            guard let found = Self.read(serversReply, extended: extended) else { return nil }
            last[link] = found
            return found
        }
        return nil
    }

    /// The connection, opened again after it was lost, once the bus has answered its Hello
    /// within `left` (sd_bus_call would wait for that without a deadline). A bus that did
    /// not answer in time pauses the reader.
    private func connection(_ left: () -> UInt64) -> OpaquePointer? {
        if let bus, sd_bus_is_ready(bus) > 0 { return bus }
        if let bus { sd_bus_close_unref(bus) }
        bus = nil
        var opened: OpaquePointer?
        if let address {
            guard sd_bus_new(&opened) >= 0, let made = opened else { return nil }
            guard sd_bus_set_address(made, address) >= 0, sd_bus_set_bus_client(made, 1) >= 0, sd_bus_start(made) >= 0 else {
                sd_bus_close_unref(made)
                return nil
            }
        } else if sd_bus_open_system(&opened) < 0 {
            return nil
        }
        guard let opened else { return nil }
        while sd_bus_is_ready(opened) <= 0 {
            guard sd_bus_is_open(opened) > 0 else {
                sd_bus_close_unref(opened)
                return nil
            }
            if sd_bus_process(opened, nil) > 0 { continue }
            if left() <= 1 {
                sd_bus_close_unref(opened)
                pausedUntil = MonotonicInstant.now() + Self.pause
                return nil
            }
            _ = sd_bus_wait(opened, left())
        }
        bus = opened
        return opened
    }

    private func failed(_ r: Int32, link: Int32) -> [LinkResolvers.BusServer]? {
        guard r == -ETIMEDOUT else {
            last[link] = nil
            return nil
        }
        pausedUntil = MonotonicInstant.now() + Self.pause
        return last[link]
    }

    private static func read(_ message: OpaquePointer, extended: Bool) -> [LinkResolvers.BusServer]? {
        guard vx_enter_servers(message, extended ? 1 : 0) >= 0 else { return nil }
        var servers: [LinkResolvers.BusServer] = []
        while true {
            var family: Int32 = 0, bytes: UnsafeRawPointer?, size = 0, port: UInt16 = 0, name: UnsafePointer<CChar>?
            let r = vx_read_server(message, extended ? 1 : 0, &family, &bytes, &size, &port, &name)
            guard r >= 0 else { return nil }
            if r == 0 { return servers }
            let address = bytes.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) } ?? []
            servers.append(LinkResolvers.BusServer(family: family, address: address, port: port, name: name.map { String(cString: $0) } ?? ""))
        }
    }
}
