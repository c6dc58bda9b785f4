import Addresses
import ArgumentParser
import CLinux
import CSystemd
import Daemon
import Glibc
import Netlink
import Nftables
import Plan
import WireGuard
import WireGuardDevice

@main
struct VPNServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vpn-server",
        abstract: "Runs vpnexec's WireGuard-compatible engine standalone from a wg-quick style file.",
        discussion: """
        Without a peer Endpoint in the file it is a listening peer: it forwards what its peers \
        send and masquerades it behind the uplink (nft table inet vpn_server_IFACE). With \
        Endpoints it is a client: it installs the file's addresses and a route per AllowedIPs \
        prefix; with 0.0.0.0/0 or ::/0 everything goes through the tunnel, routed as wg-quick does \
        (fwmark, table 51820, suppress_prefixlength 0). `wg show IFACE` and `wg set IFACE ...` work \
        through /var/run/wireguard/IFACE.sock. \
        Runs in the foreground until SIGTERM or SIGINT; the interface goes with the process.
        """)

    @Option(help: "The wg-quick style file ([Interface] and [Peer] sections).")
    var config: String

    @Option(name: .customLong("interface"), help: "TUN interface name (default: the file's name without .conf).")
    var interfaceName: String?

    @Flag(name: .customLong("no-nat"), help: "As a listening peer, do not masquerade the peers' traffic.")
    var noNAT = false

    @Flag(name: .customLong("no-offloads"), help: "Read one packet per TUN read instead of TCP super-packets (TSO) that we segment.")
    var noOffloads = false

    @Option(name: .customLong("uapi-dir"), help: "Directory of the userspace API socket.")
    var uapiDirectory = "/var/run/wireguard"

    @Option(name: .customLong("test-timing"), help: ArgumentHelp("Test only: shortened protocol timers, e.g. rekey-after=3,reject-after=6.", visibility: .hidden))
    var testTiming: String?

    @Option(name: .customLong("test-handshake-load"), help: ArgumentHelp("Test only: initiations per second that count as a flood.", visibility: .hidden))
    var testHandshakeLoad: Int?

    @Flag(name: .shortAndLong, help: "Log debug messages.")
    var verbose = false

    func run() throws {
        let log = Log(minimum: verbose ? .debug : .info)
        guard let text = try? String(contentsOfFile: config, encoding: .utf8) else {
            log.error("cannot read \(config): \(String(cString: strerror(errno)))")
            throw ExitCode(1)
        }
        let file: WgQuickConfig
        do {
            file = try WgQuickConfig.parse(text, file: config)
        } catch {
            log.error("\(error)")
            throw ExitCode(1)
        }
        let name = interfaceName ?? Self.defaultInterfaceName(config)
        let isClient = file.peers.contains { $0.endpoint != nil }
        var timing = Timing.standard
        if let testTiming {
            do { timing = try TestTiming.parse(testTiming) } catch { log.error("\(error)"); throw ExitCode(2) }
        }
        do {
            var configuration = try EngineConfiguration.from(file)
            let allowed = file.peers.flatMap(\.allowedIPs)
            let everything = isClient ? allowed.filter { $0.length == 0 } : []
            if !everything.isEmpty { configuration.fwmark = file.interface.fwmark ?? FullTunnelRouting.table }
            let tunnel = try RunningTunnel(configuration: configuration, options: .init(
                interfaceName: name, mtu: Int(file.interface.mtu ?? 1420), uapiDirectory: uapiDirectory,
                timing: timing, handshakeLoadThreshold: testHandshakeLoad ?? 1000, offloads: !noOffloads))
            let netlink = try Rtnetlink()
            try TunnelInterface.configure(name: tunnel.tun.name, addresses: file.interface.addresses,
                                          mtu: file.interface.mtu ?? 1420,
                                          routes: isClient ? allowed.filter { $0.length > 0 } : [], netlink: netlink)
            var fullTunnel: FullTunnelRouting?
            if !everything.isEmpty, let link = try netlink.link(named: tunnel.tun.name), let mark = configuration.fwmark {
                let routing = FullTunnelRouting(interfaceIndex: link.index, ipv4: everything.contains { $0.isIPv4 },
                                                ipv6: everything.contains { !$0.isIPv4 }, mark: mark)
                try routing.apply(netlink)
                fullTunnel = routing
                log.notice("\(tunnel.tun.name): everything but the tunnel's own datagrams (mark 0x\(String(mark, radix: 16))) goes through it (table \(FullTunnelRouting.table))")
            }
            var natTable: NftTable?
            if !isClient {
                try Self.enableForwarding()
                if !noNAT {
                    let table = ServerForwardingRules.table(interface: tunnel.tun.name)
                    try NftablesClient().replace(table)
                    natTable = table
                }
            }
            // Blocked before the threads start, so only sigwait below sees them.
            var stopSignals = sigset_t()
            sigemptyset(&stopSignals)
            for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&stopSignals, s) }
            pthread_sigmask(SIG_BLOCK, &stopSignals, nil)
            signal(SIGPIPE, SIG_IGN)
            tunnel.start()
            log.notice("\(tunnel.tun.name): \(isClient ? "client" : "listening peer") on UDP port \(tunnel.udp.port), \(file.peers.count) peer(s), public key \(file.interface.privateKey.publicKey)")
            sd_notify(0, "READY=1")
            var received: Int32 = 0
            repeat { sigwait(&stopSignals, &received) } while received == SIGHUP
            log.notice("\(tunnel.tun.name): stopping")
            tunnel.stop()
            if let natTable { try? NftablesClient().delete(family: natTable.family, table: natTable.name) }
            if let fullTunnel { fullTunnel.remove(netlink) }
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
        for path in ["/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"] {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0, write(fd, "1\n", 2) == 2 else {
                if fd >= 0 { close(fd) }
                throw SystemCallError("enable forwarding (\(path))")
            }
            close(fd)
        }
    }
}
