import Addresses
import Glibc
import HexDigits
import Netlink
import Plan
import Policy
import Routing

/// Reads what trusted-network rules compare (NetworkFacts): the main table's default
/// route (IPv4's, else IPv6's), its interface, its gateway's link-layer address from the
/// neighbour table, the search domains of resolv.conf and the interface's SSID. Reading
/// needs no privilege; `resolve`, when set (vpnd), asks the kernel to resolve a gateway it
/// has no neighbour entry for, so the next read knows its address.
public struct NetworkFactsReader {
    let netlink: Rtnetlink
    public var resolvConf: String
    public var wireless: WirelessNetwork?
    public var resolve = false

    public init(netlink: Rtnetlink, resolvConf: String = "/etc/resolv.conf", wireless: WirelessNetwork? = try? WirelessNetwork()) {
        self.netlink = netlink
        self.resolvConf = resolvConf
        self.wireless = wireless
    }

    public func read() -> NetworkFacts {
        var facts = NetworkFacts(searchDomains: Self.searchDomains(resolvConf: Self.contents(of: resolvConf) ?? ""))
        let route = ((try? netlink.defaultRoutes(ipv4: true)) ?? []).first ?? ((try? netlink.defaultRoutes(ipv4: false)) ?? []).first
        guard let route else { return facts }
        facts.interface = (try? netlink.links())?.first { $0.index == route.interfaceIndex }?.name
        facts.ssid = wireless?.ssid(interfaceIndex: route.interfaceIndex)
        guard let gateway = route.gateway else { return facts }
        facts.gateway = gateway.description
        let entry = ((try? netlink.neighbours(ipv4: gateway.isIPv4, interfaceIndex: route.interfaceIndex)) ?? []).first { $0.address == gateway }
        if let entry, entry.isUsable, entry.linkLayerAddress.count == 6 {
            facts.gatewayMAC = hexDigits(bytes: entry.linkLayerAddress, separator: ":")
        } else if resolve {
            try? netlink.resolveNeighbour(gateway, interfaceIndex: route.interfaceIndex)
        }
        return facts
    }

    /// The last `search` or `domain` line wins (resolv.conf(5)); each is lower case,
    /// without its trailing dot.
    public static func searchDomains(resolvConf text: String) -> [String] {
        var domains: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let keyword = words.first, keyword == "search" || keyword == "domain" else { continue }
            domains = words.dropFirst().prefix { !$0.hasPrefix("#") && !$0.hasPrefix(";") }
                .map { TrustedMatch.normalizedDomain(String($0)) }.filter { !$0.isEmpty }
        }
        return domains
    }

    static func contents(of path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 20 {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
