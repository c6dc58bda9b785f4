import ArgumentParser
import ServiceSupport
import Glibc
import WireGuard
import WireGuardDevice

/// `vpn-server [-f] IFACE`: what wireguard-go is to wg-quick on a host without the kernel
/// module. It creates the interface and its `wg` socket with no key and no peers, returns
/// to wg-quick from the background (unless -f), and takes everything else from `wg setconf`,
/// `wg set` and `ip`, which wg-quick runs next. Deleting the interface ends it.
struct WgQuickInterface {
    var name: String
    var foreground: Bool
    var verbose: Bool
    var settings: EngineSettings

    func run() throws {
        // -v, or wireguard-go's LOG_LEVEL: "verbose" or "debug" for everything, "error" for errors.
        let level = Background.environment("LOG_LEVEL")
        let log = Log(minimum: verbose || level == "verbose" || level == "debug" ? .debug : level == "error" ? .error : .info,
                      priorityPrefixes: Log.standardErrorIsJournal())
        let inherited = foreground ? [] : Background.inheritedDescriptors()
        do {
            // A new TUN interface has an MTU of 1500 until wg-quick sets its own; the
            // tunnel follows whatever it becomes.
            let tunnel = try RunningTunnel(configuration: InterfaceConfiguration(privateKey: nil), options: .init(
                interfaceName: name, mtu: 1500, uapiDirectory: settings.uapiDirectory, timing: settings.timing,
                handshakeLoadThreshold: settings.handshakeLoadThreshold, offloads: settings.offloads,
                udpOffloads: settings.udpOffloads, parallelCrypto: settings.parallelCrypto,
                events: Lifetime.events(log, interface: name)))
            try Lifetime.dropPrivileges(log: log)
            if !foreground { try Background.detach(keepingStandardError: Background.keepsStandardError(), closing: inherited) }
            _ = try Lifetime.serve(tunnel, started: "\(tunnel.tun.name): created; waiting for `wg setconf` on \(settings.uapiDirectory)/\(tunnel.tun.name).sock", log: log)
        } catch {
            log.error("\(name): \(error)")
            throw ExitCode(1)
        }
    }
}
