import Addresses
import Plan
import Policy
import Testing

/// Whom a profile's DNS proxy asks: its `dns` first; else a built-in tunnel's `DNS =`, or
/// the servers the host holds for its interface; else none, said with the fix. And the
/// texts those servers are read from, as systemd and resolvconf write them.
@Suite struct ProfileResolversTests {
    static let policy: Policy = try! Policy.parse([PolicySource(path: "/p/10.toml", text: """
        [profile.work]
        tunnel.interface = "wg0"
        dns = ["10.64.0.1"]

        [profile.streaming]
        tunnel.interface = "tun0"

        [profile.travel]
        tunnel.wireguard = "/etc/vpnexec/travel.conf"
        """)], resolver: NoNames())

    static func profile(_ name: String) -> Profile { policy.profile(named: name)! }
    static func address(_ text: String) -> IPAddress { IPAddress(text)! }
    let travelFile = (path: "/etc/vpnexec/travel.conf", dns: [Self.address("10.2.0.1"), Self.address("fd00::1")])
    let resolvconf = LinkResolvers(servers: [Self.address("10.8.0.1")], kind: .resolvconf, file: "/run/resolvconf/interface/tun0.openvpn")

    @Test func thePolicysDNSWins() {
        let chosen = ProfileResolvers.choose(Self.profile("work"), wireguardFile: travelFile, link: resolvconf)
        #expect(chosen == ProfileResolvers(servers: [Self.address("10.64.0.1")], source: .policy))
        #expect(chosen.sourceName == "dns" && chosen.file == nil && chosen.description == "10.64.0.1")
    }

    @Test func aBuiltInTunnelAsksItsFilesDNS() {
        let chosen = ProfileResolvers.choose(Self.profile("travel"), wireguardFile: travelFile, link: resolvconf)
        #expect(chosen.servers == travelFile.dns && chosen.source == .wireguardFile("/etc/vpnexec/travel.conf"), "the host's servers are not for vpnd's own interface")
        #expect(chosen.sourceName == "wg-quick" && chosen.file == "/etc/vpnexec/travel.conf")
        #expect(chosen.description == "10.2.0.1, fd00::1 (the DNS = of /etc/vpnexec/travel.conf)")
    }

    @Test func anInterfaceAsksTheHostsServersForIt() {
        let chosen = ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: resolvconf)
        #expect(chosen.servers == [Self.address("10.8.0.1")] && chosen.sourceName == "resolvconf" && chosen.file == "/run/resolvconf/interface/tun0.openvpn")
        let resolved = LinkResolvers(servers: [Self.address("10.9.0.1")], kind: .resolved, file: "/run/systemd/resolve/netif/7")
        #expect(ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: resolved).description
                == "10.9.0.1 (systemd-resolved's, /run/systemd/resolve/netif/7)")
        let networkd = LinkResolvers(servers: [Self.address("10.9.0.2")], kind: .networkd, file: "/run/systemd/netif/links/7")
        #expect(ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: networkd).sourceName == "systemd-networkd")

        let bus = ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: LinkResolvers(servers: [Self.address("10.9.0.3")], busLink: 7))
        #expect(bus.sourceName == "systemd-resolved-dbus" && bus.file == nil && bus.busLink == 7)
        #expect(bus.description == "10.9.0.3 (systemd-resolved over D-Bus, link 7)")
        #expect(ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: resolved).busLink == nil)
    }

    @Test func noneIsAnErrorWithTheFix() {
        let travel = ProfileResolvers.choose(Self.profile("travel"), wireguardFile: (path: "/etc/vpnexec/travel.conf", dns: []), link: nil)
        #expect(travel.servers.isEmpty && travel.source == .none && travel.sourceName == "none")
        #expect(travel.problem == "profile travel has no DNS resolvers, so its members' names do not resolve (their queries are refused): "
                + "set dns = [...] in [profile.travel] or give the tunnel's wg-quick file /etc/vpnexec/travel.conf a DNS = line")
        let streaming = ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: nil)
        #expect(streaming.problem == "profile streaming has no DNS resolvers, so its members' names do not resolve (their queries are refused): "
                + "set dns = [...] in [profile.streaming] or give the tunnel's wg-quick file a DNS = line "
                + "(without dns, the profile asks the servers the host holds for tun0, from systemd-resolved or resolvconf; it holds none)")
        let empty = LinkResolvers(servers: [], kind: .resolvconf, file: "/run/resolvconf/interface/tun0")
        #expect(ProfileResolvers.choose(Self.profile("streaming"), wireguardFile: nil, link: empty).source == .none)
    }

    @Test func everyProfileByName() {
        let all = ProfileResolvers.all(Self.policy, wireguardFiles: ["vx-travel": travelFile], links: ["tun0": resolvconf, "wg0": resolvconf])
        #expect(all.mapValues(\.sourceName) == ["work": "dns", "streaming": "resolvconf", "travel": "wg-quick"])
    }

    /// vpnctl check: a built-in tunnel whose file has no DNS = is an error at its tunnel
    /// key; an interface without servers now a warning at its profile; with some, a note.
    @Test func checkSaysWhatItCanKnow() {
        let noDNS = ProfileResolvers.check(Self.policy, wireguardFiles: ["vx-travel": (path: "/etc/vpnexec/travel.conf", dns: [])], links: [:])
        #expect(noDNS.errors.map(\.description) == ["/p/10.toml:9:20: error: " + ProfileResolvers.missing(Self.profile("travel"), wireguardFile: "/etc/vpnexec/travel.conf")])
        #expect(noDNS.lines.count == 1 && noDNS.lines[0].hasPrefix("/p/10.toml:5:1: warning: profile \"streaming\" has no dns: its members ask the DNS servers the host holds for tun0 "))
        let found = ProfileResolvers.check(Self.policy, wireguardFiles: ["vx-travel": travelFile], links: ["tun0": resolvconf])
        #expect(found.errors.isEmpty)
        #expect(found.lines == ["profile streaming: no dns, its members ask tun0's DNS servers: now 10.8.0.1 (resolvconf's, /run/resolvconf/interface/tun0.openvpn)"])
    }

    /// systemd-resolved's link file (link_save_user) and systemd-networkd's, as systemd 252
    /// writes them: ports, interface indexes and server names; only what the proxy can ask.
    @Test func systemdLinkFiles() {
        let resolved = """
            # This is private data. Do not parse.
            LLMNR=yes
            MDNS=no
            SERVERS=10.64.0.1 10.64.0.2:53 10.64.0.3:5353 [fd00::53]:53%7#dns.example fd00::54 fe80::1%7 [fd00::55]:853#tls.example 10.64.0.1
            DOMAINS=~.
            """
        #expect(LinkResolvers.systemdServers(resolved, key: "SERVERS").map(\.description) == ["10.64.0.1", "10.64.0.2", "fd00::53", "fd00::54"])
        #expect(LinkResolvers.systemdServers(resolved, key: "DNS").isEmpty)
        let networkd = "# This is private data. Do not parse.\nADMIN_STATE=configured\nOPER_STATE=routable\nDNS=192.0.2.53 2001:db8::53#resolver.example\nNTP=\n"
        #expect(LinkResolvers.systemdServers(networkd, key: "DNS").map(\.description) == ["192.0.2.53", "2001:db8::53"])
        // As systemd-resolved 252.39 wrote them after SetLinkDNSEx (10.99.1.1; 10.99.1.3 port
        // 53 named dns.example), and systemd-networkd 252.39 for a .network file's
        // DNS=10.98.0.1, DNS=[fd98::53]:53%vxd0#dns.example, DNS=10.98.0.3:5353.
        #expect(LinkResolvers.systemdServers("# This is private data. Do not parse.\nLLMNR=yes\nMDNS=no\nSERVERS=10.99.1.1 10.99.1.3#dns.example\n", key: "SERVERS")
                .map(\.description) == ["10.99.1.1", "10.99.1.3"])
        #expect(LinkResolvers.systemdServers("NETWORK_FILE=/run/systemd/network/10-vxd0.network\nDNS=10.98.0.1 fd98::53#dns.example 10.98.0.3:5353\nNTP=\n", key: "DNS")
                .map(\.description) == ["10.98.0.1", "fd98::53"])
        #expect(LinkResolvers.systemdServers("SERVERS=10.99.1.2:5353\n", key: "SERVERS").isEmpty)
    }

    /// resolved's `DNSEx` (a(iayqs)) and `DNS` (a(iay)) values of a link, as read off the
    /// bus: AF_INET with 4 bytes, AF_INET6 with 16, port 53 or 0 (the default); another
    /// port, a link-local address, a length that does not fit its family, another family
    /// left out; a server name (DNS over TLS's) ignored; duplicates once.
    @Test func resolvedBusValues() {
        typealias Server = LinkResolvers.BusServer
        let values = [Server(family: 2, address: [10, 99, 1, 1]),
                      Server(family: 2, address: [10, 99, 1, 3], port: 53, name: "dns.example"),
                      Server(family: 2, address: [10, 99, 1, 4], port: 5353),
                      Server(family: 10, address: [0xfd, 0x99, 0, 1] + Array(repeating: 0, count: 11) + [0x53]),
                      Server(family: 10, address: [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1]),
                      Server(family: 10, address: [10, 99, 1, 5]),
                      Server(family: 2, address: Array(repeating: 1, count: 16)),
                      Server(family: 1, address: [10, 99, 1, 6]),
                      Server(family: 2, address: [10, 99, 1, 1], port: 53)]
        #expect(LinkResolvers.busServers(values).map(\.description) == ["10.99.1.1", "10.99.1.3", "fd99:1::53"])
        #expect(LinkResolvers.busServers([]).isEmpty)
    }

    /// resolvconf's records: nameserver lines (scope ids dropped, link-local left out), and
    /// the names its helpers give an interface's records.
    @Test func resolvconfRecords() {
        let record = "# from openvpn\nnameserver 10.8.0.1\nnameserver\tfd00::1%tun0\nnameserver fe80::1%tun0\nsearch vpn.example\nnameserver 10.8.0.1\n"
        #expect(LinkResolvers.resolvConfServers(record).map(\.description) == ["10.8.0.1", "fd00::1"])
        for name in ["tun0", "tun0.openvpn", "tun0.inet", "tun.tun0"] { #expect(LinkResolvers.isRecord(name, of: "tun0"), "\(name)") }
        for name in ["tun01", "tun", "eth0.inet", "NetworkManager", "lo.tun0.x", "a.b.tun0"] { #expect(!LinkResolvers.isRecord(name, of: "tun0"), "\(name)") }
    }
}

/// The policy above names no user or group.
private struct NoNames: NameResolver {
    func uid(ofUser name: String) -> UInt32? { nil }
    func gid(ofGroup name: String) -> UInt32? { nil }
}
