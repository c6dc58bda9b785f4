import Addresses
import ArgumentParser
import BuildVersion
import ServiceSupport
import Glibc
import WireGuard

@main
struct VPNServer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vpn-server",
        abstract: "Runs vpnexec's WireGuard-compatible engine standalone: from a wg-quick style file, or as wg-quick's userspace implementation.",
        usage: """
        vpn-server --config FILE [--interface NAME] [--no-nat] [--no-offloads] [--no-udp-offloads] [--no-parallel-crypto] [--uapi-dir DIR] [-v]
        vpn-server [-f|--foreground] INTERFACE
        """,
        discussion: """
        With --config: without a peer Endpoint in the file it is a listening peer: it forwards \
        what its peers send and masquerades it behind the uplink (nft table inet vpn_server_IFACE). \
        With Endpoints it is a client: it installs the file's addresses and a route per AllowedIPs \
        prefix (Table = off adds none, Table = N puts them in table N); with 0.0.0.0/0 or ::/0 \
        everything goes through the tunnel, routed as wg-quick does (fwmark, table 51820, \
        suppress_prefixlength 0). Runs in the foreground until SIGTERM or SIGINT, or until the \
        interface is deleted; the interface goes with the process.

        With an INTERFACE name instead, it is what wireguard-go is to wg-quick \
        (WG_QUICK_USERSPACE_IMPLEMENTATION=vpn-server wg-quick up wg0): it creates the interface \
        and its socket, goes into the background (unless -f), and takes its configuration from \
        `wg setconf` and `ip`; deleting the interface (wg-quick down) ends it.

        `wg show IFACE` and `wg set IFACE ...` work through /var/run/wireguard/IFACE.sock.
        """,
        version: "vpn-server \(String(cString: vpnexec_build_version()))")

    @Option(help: "The wg-quick style file ([Interface] and [Peer] sections).")
    var config: String?

    @Argument(help: "As wireguard-go: the interface to create and serve, configured by `wg setconf` (no --config).")
    var interface: String?

    @Flag(name: [.customShort("f"), .customLong("foreground")], help: "With INTERFACE: stay in the foreground.")
    var foreground = false

    @Option(name: .customLong("interface"), help: "With --config: the TUN interface's name (default: the file's name without .conf).")
    var interfaceName: String?

    @Flag(name: .customLong("no-nat"), help: "As a listening peer, do not masquerade the peers' traffic.")
    var noNAT = false

    @Flag(name: .customLong("no-offloads"), help: "Read one packet per TUN read instead of TCP super-packets (TSO) that we segment.")
    var noOffloads = false

    @Flag(name: .customLong("no-udp-offloads"), help: "Send and receive the encrypted datagrams one by one instead of in runs (UDP GSO and GRO).")
    var noUDPOffloads = false

    @Flag(name: .customLong("no-parallel-crypto"), help: "Encrypt and decrypt on the two loop threads only, without a helper thread per direction.")
    var noParallelCrypto = false

    @Option(name: .customLong("uapi-dir"), help: "Directory of the userspace API socket.")
    var uapiDirectory = "/var/run/wireguard"

    @Option(name: .customLong("test-timing"), help: ArgumentHelp("Test only: shortened protocol timers, e.g. rekey-after=3,reject-after=6.", visibility: .hidden))
    var testTiming: String?

    @Option(name: .customLong("test-handshake-load"), help: ArgumentHelp("Test only: initiations per second that count as a flood.", visibility: .hidden))
    var testHandshakeLoad: Int?

    @Flag(name: .shortAndLong, help: "Log debug messages.")
    var verbose = false

    func validate() throws {
        switch (config, interface) {
        case (nil, nil):
            throw ValidationError("give --config FILE, or an interface name as wg-quick does (vpn-server wg0)")
        case (.some, .some):
            throw ValidationError("--config FILE and an interface name exclude each other; with --config, --interface NAME names it")
        case (nil, .some):
            if interfaceName != nil || noNAT { throw ValidationError("--interface and --no-nat go with --config; wg-quick configures the rest") }
        case (.some, nil):
            if foreground { throw ValidationError("--foreground goes with an interface name; with --config vpn-server always runs in the foreground") }
        }
    }

    func run() throws {
        let log = Log(minimum: verbose ? .debug : .info, priorityPrefixes: Log.standardErrorIsJournal())
        var timing = Timing.standard
        if let testTiming {
            do { timing = try TestTiming.parse(testTiming) } catch { log.error("\(error)"); throw ExitCode(2) }
        }
        let settings = EngineSettings(uapiDirectory: uapiDirectory, timing: timing, handshakeLoadThreshold: testHandshakeLoad ?? 1000,
                                      offloads: !noOffloads, udpOffloads: !noUDPOffloads, parallelCrypto: !noParallelCrypto)
        if let config {
            try ConfiguredTunnel(path: config, interfaceName: interfaceName, masquerade: !noNAT, settings: settings, log: log).run()
        } else if let interface {
            try WgQuickInterface(name: interface, foreground: foreground, verbose: verbose, settings: settings).run()
        }
    }
}

/// The engine's options that come from the command line, whichever way it runs.
struct EngineSettings {
    var uapiDirectory: String
    var timing: Timing
    var handshakeLoadThreshold: Int
    var offloads: Bool
    var udpOffloads: Bool
    var parallelCrypto: Bool
}
