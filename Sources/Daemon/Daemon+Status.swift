import Control
import Glibc
import Nftables
import Plan
import Policy

/// `vpnctl status`: the kernel's counters and state, the engines', the proxies'.
extension Daemon {
    func dnsStatus(_ profile: Profile, counters nft: [String: NftCounter]) -> DNSStatus? {
        guard let counters = dns?.counters(of: profile.name) else { return nil }
        let names = ProfileObjectNames(profile.name)
        var sizes: [String: Int] = [:]
        for (set, used, ipv4) in [(names.bypassDomainSet(ipv4: true), !profile.bypassDomains.isEmpty, true),
                                  (names.bypassDomainSet(ipv4: false), !profile.bypassDomains.isEmpty, false),
                                  (names.tunneledDomainSet(ipv4: true), !profile.bypassDomains.isEmpty, true),
                                  (names.tunneledDomainSet(ipv4: false), !profile.bypassDomains.isEmpty, false),
                                  (names.routeDomainSet(ipv4: true), !profile.routeDomains.isEmpty, true),
                                  (names.routeDomainSet(ipv4: false), !profile.routeDomains.isEmpty, false)] where used {
            sizes[set] = (try? applier.elements(of: set, ipv4: ipv4).count) ?? 0
        }
        var servers = profile.dnsServers
        if servers.isEmpty, let loaded = tunnelFiles[profile.tunnel.interfaceName] { servers = loaded.config.interface.dnsServers }
        var status = DNSStatus(port: policy.dns.port(for: profile), servers: servers.map(\.description),
                               bypassDomains: profile.bypassDomains.prefix(DNSStatus.listedDomains).map(\.description), bypassDomainCount: profile.bypassDomains.count,
                               routeDomains: profile.routeDomains.prefix(DNSStatus.listedDomains).map(\.description), routeDomainCount: profile.routeDomains.count,
                               answered: counters.answered, forwarded: counters.forwarded, failed: counters.failed, dropped: counters.droppedTotal,
                               setSizes: sizes)
        addEncryptedAndShared(profile, counters: counters, nft: nft, to: &status)
        return status
    }

    func exceptionStatus(_ profile: Profile, direct: Traffic) -> ExceptionStatus {
        var status = ExceptionStatus()
        status.allowLAN = profile.allowLAN
        status.allowMulticast = profile.allowMulticast
        status.routeNetworks = profile.routeNetworks.map(\.description)
        status.bypassExecutables = profile.bypassExecutables
        status.routeExecutables = profile.routeExecutables
        status.execMoves = executables.moves(profile.name)
        status.direct = direct
        return status
    }

    func statusReport() throws -> StatusReport {
        let counters = try applier.counters()
        let links = try rtnl.links()
        let addresses = try rtnl.addresses()
        func traffic(_ name: String) -> Traffic {
            Traffic(packets: counters[name]?.packets ?? 0, bytes: counters[name]?.bytes ?? 0)
        }
        let profiles = policy.profiles.map { profile -> ProfileStatus in
            let names = ProfileObjectNames(profile.name)
            let path = profile.cgroupPath(parent: options.cgroupParent)
            let link = links.first { $0.name == profile.tunnel.interfaceName }
            var tunnel = TunnelStatus(
                interface: profile.tunnel.interfaceName, state: Self.tunnelState(link),
                addresses: link.map { l in addresses.filter { $0.interfaceIndex == l.index }.map(\.prefix.description) } ?? [],
                rxBytes: link?.statistics.rxBytes ?? 0, txBytes: link?.statistics.txBytes ?? 0)
            tunnel.transport = transportStatus(profile, counters: counters)
            tunnel.servers = failover.status(interface: profile.tunnel.interfaceName)
            tunnel.demand = demandStatus(profile)
            if profile.tunnel.isBuiltIn {
                tunnel.wireguard = tunnels.status(interface: profile.tunnel.interfaceName).map(WireGuardReport.init)
                    ?? WireGuardReport(publicKey: nil, listenPort: nil, peers: [], drops: [:])
                tunnel.wireguard?.reconnect = tunnels.reconnectReport(interface: profile.tunnel.interfaceName)
            }
            var status = ProfileStatus(
                name: profile.name, mark: profile.mark.value, table: profile.table,
                killswitch: profile.killswitch, cgroup: path,
                members: memberCount(of: profile),
                tunnel: tunnel, sent: traffic(names.sentCounter), received: traffic(names.receivedCounter),
                throughTunnel: traffic(names.tunnelCounter), droppedByKillswitch: traffic(names.droppedCounter),
                exceptions: exceptionStatus(profile, direct: traffic(names.directCounter)), dns: dnsStatus(profile, counters: counters))
            status.joinedCgroups = Array(memberCgroups(of: profile).dropFirst())
            status.trusted = trustedStatus(profile)
            status.via = hopStatus(profile, links: links, counters: counters)
            return status
        }
        var report = StatusReport(daemonPID: getpid(), policyDirectory: options.policyDirectory,
                            cgroupRoot: hierarchy.mountPoint, profiles: profiles,
                            droppedUnknownCgroup: traffic(unknownCgroupCounter), refusedConnections: server?.refusedConnections ?? 0,
                            sandbox: sandboxSummary, bypassMoves: executables.moves(Policy.bypassSliceName),
                            bypassed: traffic(bypassedCounter), systemProfile: policy.systemProfile?.name)
        report.birthMarks = birthMarksSummary
        report.executableRules = executables.status(policy)
        return report
    }
}
