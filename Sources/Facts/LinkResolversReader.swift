import Addresses
import Descriptors
import Glibc
import Plan

/// Reads the DNS servers the host holds for an interface (LinkResolvers), without asking
/// any daemon: systemd-resolved's link file (servers set over its bus API), else
/// systemd-networkd's (a link it manages), else resolvconf's records for the interface
/// (Debian's resolvconf, openresolv). The first place with servers wins.
/// A link file is named by the interface's index, which names a link only in the network
/// namespace those daemons run in: `byIndex` false (vpnd in another namespace than the
/// initial one, which shares the host's /run) leaves them out. Reading needs no privilege.
public struct LinkResolversReader: Sendable {
    public var byIndex: Bool
    public var resolvedDirectory = "/run/systemd/resolve/netif"
    public var networkdDirectory = "/run/systemd/netif/links"
    public var resolvconfDirectories = ["/run/resolvconf/interface", "/run/resolvconf/interfaces"]

    public init(byIndex: Bool = true) {
        self.byIndex = byIndex
    }

    /// `index`: the interface's index, if it exists now.
    public func read(interface: String, index: Int32?) -> LinkResolvers? {
        if byIndex, let index, index > 0 {
            for (directory, key, kind) in [(resolvedDirectory, "SERVERS", LinkResolvers.Kind.resolved), (networkdDirectory, "DNS", .networkd)] {
                let path = "\(directory)/\(index)"
                guard let text = NetworkFactsReader.contents(of: path) else { continue }
                let servers = LinkResolvers.systemdServers(text, key: key)
                if !servers.isEmpty { return LinkResolvers(servers: servers, kind: kind, file: path) }
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
