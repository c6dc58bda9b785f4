import Addresses
import Descriptors
import Glibc
import Plan

/// Reads the DNS servers the host holds for an interface (LinkResolvers): systemd-resolved's
/// link file (servers set over its bus API), or where that cannot be read (its directory is
/// resolved's user's, mode 0700) or is not there, resolved itself over D-Bus (`bus`); else
/// systemd-networkd's file (a link it manages), else resolvconf's records for the interface
/// (Debian's resolvconf, openresolv). The first place with servers wins.
/// A link is named by the interface's index, which names it only in the network namespace
/// those daemons run in: `byIndex` false (vpnd in another namespace than the initial one,
/// which shares the host's /run) leaves those out. Reading needs no privilege.
public struct LinkResolversReader: Sendable {
    public var byIndex: Bool
    public var resolvedDirectory = "/run/systemd/resolve/netif"
    public var networkdDirectory = "/run/systemd/netif/links"
    public var resolvconfDirectories = ["/run/resolvconf/interface", "/run/resolvconf/interfaces"]
    /// resolved's servers for a link index, over D-Bus (ResolvedLinkBus); nil: not asked.
    public var bus: (@Sendable (Int32) -> [LinkResolvers.BusServer]?)?

    public init(byIndex: Bool = true, bus: (@Sendable (Int32) -> [LinkResolvers.BusServer]?)? = nil) {
        self.byIndex = byIndex
        self.bus = bus
    }

    /// `index`: the interface's index, if it exists now.
    public func read(interface: String, index: Int32?) -> LinkResolvers? {
        if byIndex, let index, index > 0 {
            let path = "\(resolvedDirectory)/\(index)"
            if let text = NetworkFactsReader.contents(of: path) {
                let servers = LinkResolvers.systemdServers(text, key: "SERVERS")
                if !servers.isEmpty { return LinkResolvers(servers: servers, kind: .resolved, file: path) }
            } else if let found = bus?(index) {
                let servers = LinkResolvers.busServers(found)
                if !servers.isEmpty { return LinkResolvers(servers: servers, busLink: index) }
            }
            let networkd = "\(networkdDirectory)/\(index)"
            if let text = NetworkFactsReader.contents(of: networkd) {
                let servers = LinkResolvers.systemdServers(text, key: "DNS")
                if !servers.isEmpty { return LinkResolvers(servers: servers, kind: .networkd, file: networkd) }
            }
        }
        for directory in resolvconfDirectories {
            var servers: [IPAddress] = []
            var first: String?
            for name in Self.names(in: directory).sorted() where LinkResolvers.isRecord(name, of: interface) {
                let path = directory + "/" + name
                let found = LinkResolvers.resolvConfServers(NetworkFactsReader.contents(of: path) ?? "")
                if !found.isEmpty, first == nil { first = path }
                servers += found.filter { !servers.contains($0) }
            }
            if let first { return LinkResolvers(servers: servers, kind: .resolvconf, file: first) }
        }
        return nil
    }

    /// The interface `name`'s, with its index as this namespace has it now (vpnctl check).
    public func read(interface name: String) -> LinkResolvers? {
        let index = if_nametoindex(name)
        return read(interface: name, index: index == 0 ? nil : Int32(bitPattern: index))
    }

    /// Whether the network namespace this process is in is the one `initial` names (the
    /// initial one, where systemd's network daemons run); true when that cannot be told.
    public static func inNamespace(_ initial: String) -> Bool {
        var own = stat(), other = stat()
        guard stat("/proc/self/ns/net", &own) == 0, stat(initial, &other) == 0 else { return true }
        return own.st_ino == other.st_ino && own.st_dev == other.st_dev
    }

    static func names(in directory: String) -> [String] {
        Directory.names(of: directory).filter { !$0.hasPrefix(".") }
    }
}
