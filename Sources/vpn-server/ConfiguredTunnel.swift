import Addresses
import ArgumentParser
import Descriptors
import HexDigits
import ServiceSupport
import Glibc
import Netlink
import Nftables
import Plan
import WireGuard
import WireGuardDevice

/// `vpn-server --config FILE`: the engine with everything the file asks, set up by itself —
/// addresses, MTU, routes by `Table`, the full-tunnel rules, forwarding and NAT as a
/// listening peer — and taken down again when it stops or its interface is deleted.
struct ConfiguredTunnel {
    var path: String
    var interfaceName: String?
    var masquerade: Bool
    var settings: EngineSettings
    var log: Log

    func run() throws {
        let text: String
        do {
            text = String(decoding: try FileDescriptor.open(path, O_RDONLY).readToEnd(), as: UTF8.self)
        } catch {
            log.error("cannot read \(path): \(error.reason)")
            throw ExitCode(1)
        }
        let file: WgQuickConfig
        do {
            file = try WgQuickConfig.parse(text, file: path)
        } catch {
            for problem in error.errors { log.error("\(problem)") }
            throw ExitCode(1)
        }
        if let warning = FileWarnings.access(path: path) { log.warning(warning) }
        for warning in FileWarnings.notApplied(file) { log.warning(warning) }
        let name = interfaceName ?? Self.defaultInterfaceName(path)
        let isClient = file.peers.contains { $0.endpoint != nil }
        if !isClient, case let .number(table) = file.interface.table {
            log.error("\(path):\(file.interface.keyLines["table"] ?? file.interface.line): Table = \(table) is for a client's routes; a listening peer (no peer has an Endpoint) routes nothing. Remove it, or use off or auto")
            throw ExitCode(1)
        }
        do {
            var configuration = try EngineConfiguration.from(file)
            let routing = ClientRoutes(allowedIPs: isClient ? file.peers.flatMap(\.allowedIPs) : [], table: file.interface.table)
            if !routing.everything.isEmpty { configuration.fwmark = file.interface.fwmark ?? FullTunnelRouting.table }
            let tunnel = try RunningTunnel(configuration: configuration, options: .init(
                interfaceName: name, mtu: Int(file.interface.mtu ?? 1420), uapiDirectory: settings.uapiDirectory,
                timing: settings.timing, handshakeLoadThreshold: settings.handshakeLoadThreshold, offloads: settings.offloads,
                udpOffloads: settings.udpOffloads, parallelCrypto: settings.parallelCrypto,
                events: Lifetime.events(log, interface: name)))
            let netlink = try Rtnetlink()
            try TunnelInterface.configure(name: tunnel.tun.name, addresses: file.interface.addresses, mtu: file.interface.mtu ?? 1420,
                                          routes: routing.routes, table: routing.table, netlink: netlink)
            if file.interface.table == .off && isClient {
                log.notice("\(tunnel.tun.name): Table = off: no routes to the peers' AllowedIPs added")
            }
            var fullTunnel: FullTunnelRouting?
            if !routing.everything.isEmpty, let link = try netlink.link(named: tunnel.tun.name), let mark = configuration.fwmark {
                let rules = FullTunnelRouting(interfaceIndex: link.index, ipv4: routing.everything.contains { $0.isIPv4 },
                                              ipv6: routing.everything.contains { !$0.isIPv4 }, mark: mark)
                try rules.apply(netlink)
                fullTunnel = rules
                log.notice("\(tunnel.tun.name): everything but the tunnel's own datagrams (mark \(hex(mark))) goes through it (table \(FullTunnelRouting.table))")
            }
            var natTable: NftTable?
            if !isClient {
                try Self.enableForwarding()
                if masquerade {
                    let table = ServerForwardingRules.table(interface: tunnel.tun.name)
                    try NftablesClient().replace(table)
                    natTable = table
                }
            }
            // Undone however the engine ends: a signal, or its interface deleted under it.
            defer {
                if let natTable { try? NftablesClient().delete(family: natTable.family, table: natTable.name) }
                if let fullTunnel { fullTunnel.remove(netlink) }
            }
            try Lifetime.dropPrivileges(log: log)
            _ = try Lifetime.serve(tunnel, started: "\(tunnel.tun.name): \(isClient ? "client" : "listening peer") on UDP port \(tunnel.udp.port), \(file.peers.count) \(file.peers.count == 1 ? "peer" : "peers"), public key \(file.interface.privateKey.publicKey)", log: log)
        } catch let exit as ExitCode {
            throw exit
        } catch {
            log.error("\(error)")
            throw ExitCode(1)
        }
    }

    /// wg-quick names the interface after the file: /etc/wireguard/wg0.conf is wg0.
    static func defaultInterfaceName(_ path: String) -> String {
        var base = path.split(separator: "/").last.map(String.init) ?? "wg0"
        if base.hasSuffix(".conf") { base.removeLast(5) }
        return String(base.prefix(15))
    }

    static func enableForwarding() throws {
        for path in ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding"] { try SysctlWriter.write(path, "1") }
    }
}
