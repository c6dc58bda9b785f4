import Facts
import Plan
import Policy
import TunnelFiles

/// `vpnctl check` on whom the profiles without `dns` would ask (ProfileResolvers.check):
/// their built-in tunnels' `DNS =`, and the servers this machine holds now for their
/// interfaces (asked of systemd-resolved over D-Bus where its link record is not readable,
/// as vpnd does).
enum ResolversCheck {
    static func run(_ policy: Policy, tunnelFiles: [String: TunnelFiles.Loaded],
                    reader: LinkResolversReader = LinkResolversReader(bus: { [bus = ResolvedLinkBus()] in bus.servers(link: $0) }))
        -> (errors: [PolicyDiagnostic], lines: [String]) {
        let files = tunnelFiles.mapValues { loaded in (path: loaded.servers.first?.path ?? "", dns: loaded.config.interface.dnsServers) }
        var links: [String: LinkResolvers] = [:]
        for profile in policy.profiles where profile.dnsServers.isEmpty && !profile.tunnel.isBuiltIn {
            links[profile.tunnel.interfaceName] = reader.read(interface: profile.tunnel.interfaceName)
        }
        return ProfileResolvers.check(policy, wireguardFiles: files, links: links)
    }
}
