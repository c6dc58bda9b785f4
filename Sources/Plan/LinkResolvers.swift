import Addresses

/// The DNS servers the host holds for one interface, and where they were found: what a
/// tunnel brought up by another program was given (wg-quick's `DNS =`, OpenVPN's pushed
/// servers, NetworkManager's) lands in one of these places, as that program's helper put it.
/// Read by Facts.LinkResolversReader; the texts are parsed here.
public struct LinkResolvers: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        /// systemd-resolved's own record of a link's servers, set over its bus API
        /// (`resolvectl dns`, NetworkManager, wg-quick and OpenVPN's update-systemd-resolved
        /// through resolvectl's resolvconf): /run/systemd/resolve/netif/IFINDEX, `SERVERS=`.
        case resolved = "systemd-resolved"
        /// The same servers asked of systemd-resolved over D-Bus (its `Link` object's `DNSEx`,
        /// or `DNS` where it has no `DNSEx`), where its link record cannot be read.
        case resolvedBus = "systemd-resolved-dbus"
        /// systemd-networkd's state of a link it manages (whose servers resolved takes from
        /// it): /run/systemd/netif/links/IFINDEX, `DNS=`.
        case networkd = "systemd-networkd"
        /// resolvconf's records (Debian's /run/resolvconf/interface/, openresolv's
        /// /run/resolvconf/interfaces/), `nameserver` lines.
        case resolvconf
    }

    public var servers: [IPAddress]
    public var kind: Kind
    /// The file they were read from (for the few records of one interface, the first);
    /// nil for `resolvedBus`.
    public var file: String?
    /// For `resolvedBus`: the interface index resolved was asked about.
    public var link: Int32?

    public init(servers: [IPAddress], kind: Kind, file: String) {
        self.servers = servers
        self.kind = kind
        self.file = file
    }

    /// What systemd-resolved answered over D-Bus for the link `link`.
    public init(servers: [IPAddress], busLink link: Int32) {
        self.servers = servers
        kind = .resolvedBus
        self.link = link
    }

    /// Where they were found, for people: "resolvconf's, /run/resolvconf/interface/tun.wg0",
    /// "systemd-resolved over D-Bus, link 5".
    public var origin: String {
        if let file { return "\(kind.rawValue)'s, \(file)" }
        return "systemd-resolved over D-Bus, link \(link ?? 0)"
    }

    /// One element of resolved's `DNSEx` (a(iayqs): family, address bytes, port, server
    /// name) or `DNS` (a(iay): no port, no name) property of a link.
    public struct BusServer: Hashable, Sendable {
        public var family: Int32
        public var address: [UInt8]
        /// 0: the default (53).
        public var port: UInt16
        public var name: String

        public init(family: Int32, address: [UInt8], port: UInt16 = 0, name: String = "") {
            self.family = family
            self.address = address
            self.port = port
            self.name = name
        }
    }

    /// The servers of a link's `DNSEx` or `DNS` as resolved gives them: an AF_INET (2)
    /// address of 4 bytes or an AF_INET6 (10) one of 16; as for the files, only those the
    /// proxy can ask (port 53 or none, not link-local). The server name (DNS over TLS's)
    /// does not change whom the proxy asks, in the clear, through the tunnel.
    public static func busServers(_ entries: [BusServer]) -> [IPAddress] {
        unique(entries.compactMap { entry -> IPAddress? in
            guard entry.port == 0 || entry.port == 53 else { return nil }
            switch (entry.family, entry.address.count) {
            case (2, 4), (10, 16): return usable(IPAddress(bytes: entry.address))
            default: return nil
            }
        })
    }

    /// The servers of a systemd-resolved link file (`SERVERS=`) or a systemd-networkd one
    /// (`DNS=`), as systemd writes each (in_addr_port_ifindex_name_to_string): ADDRESS,
    /// IPV4:PORT or [IPV6]:PORT, then %IFINDEX, then #SERVER-NAME. Only those the proxy
    /// can ask: port 53 (or none), and no link-local IPv6 address (its scope is a link of
    /// the host's, not the tunnel).
    public static func systemdServers(_ text: String, key: String) -> [IPAddress] {
        var servers: [IPAddress] = []
        for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix(key + "=") {
            servers = line.dropFirst(key.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap(systemdServer)
        }
        return unique(servers)
    }

    /// One word of a systemd server list, or nil if the proxy cannot ask it.
    static func systemdServer(_ word: Substring) -> IPAddress? {
        var text = word.prefix { $0 != "#" }
        var port: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...].prefix { $0 != "%" }
            if rest.hasPrefix(":") { port = rest.dropFirst() } else if !rest.isEmpty { return nil }
            text = text[text.index(after: text.startIndex)..<close]
        } else {
            text = text.prefix { $0 != "%" }
            // An IPv4 address with a port has one colon; an IPv6 one without brackets has no port.
            if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
                port = text[text.index(after: colon)...]
                text = text[..<colon]
            }
        }
        if let port, port != "53" { return nil }
        return usable(IPAddress(text))
    }

    /// The `nameserver` lines of a resolv.conf-style record (resolvconf's), scope ids
    /// dropped; link-local IPv6 ones left out, as above.
    public static func resolvConfServers(_ text: String) -> [IPAddress] {
        var servers: [IPAddress] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { continue }
            if let address = usable(IPAddress(words[1].prefix { $0 != "%" })) { servers.append(address) }
        }
        return unique(servers)
    }

    /// The names under which resolvconf's helpers record an interface's servers, for
    /// `interface`: the interface itself (pppd, `resolvconf -a tun0`), the interface with a
    /// suffix (`tun0.openvpn` from OpenVPN's update-resolv-conf, `eth0.dhclient`,
    /// `eth0.inet` from ifupdown), and with a prefix of interface-order's (`tun.wg0`, as
    /// wg-quick names it where /etc/resolvconf/interface-order lists `tun*`).
    public static func isRecord(_ name: String, of interface: String) -> Bool {
        if name == interface || name.hasPrefix(interface + ".") { return true }
        guard name.hasSuffix("." + interface) else { return false }
        let prefix = name.dropLast(interface.count + 1)
        return !prefix.isEmpty && prefix.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" }
    }

    static func usable(_ address: IPAddress?) -> IPAddress? {
        guard let address, !IPPrefix("fe80::/10")!.contains(address) else { return nil }
        return address
    }

    static func unique(_ servers: [IPAddress]) -> [IPAddress] {
        var seen: Set<IPAddress> = []
        return servers.filter { seen.insert($0).inserted }
    }
}
