import Addresses
import Control
import Glibc
import Monotonic
import Netlink
import Plan
import Policy
import TunnelFiles
import WireGuard
import WireGuardDevice
import ServiceSupport

/// vpnd's own WireGuard tunnels: one running engine per profile with `tunnel.wireguard`.
/// Files are read and checked with the policy (an error names file:line and changes
/// nothing); the engines are reconciled after that: new or changed files start a fresh
/// tunnel, removed ones stop. While a tunnel is down, connecting or dead, the profile's
/// routes and killswitch hold exactly as for any tunnel interface.
public final class BuiltInTunnels {
    private var running: [String: (tunnel: RunningTunnel, text: String, demand: TunnelDemand.Settings)] = [:]
    let log: Log
    /// Each tunnel's uplinks at the last look (BuiltInTunnels+Reconnect).
    var uplinks: [String: [Endpoint: Uplink]] = [:]
    /// When each tunnel's network last changed, until ServerFailover takes it (`looks`).
    var networkChanges: [String: MonotonicInstant] = [:]
    /// A stopped tunnel's reconnect schedules, for the one that replaces it.
    var schedules: [String: [PublicKey: ReconnectSchedule]] = [:]
    /// Where `wg` finds the tunnels' sockets; nil serves none (tests of vpnd alone).
    private let uapiDirectory: String?

    public init(log: Log, uapiDirectory: String? = "/var/run/wireguard") {
        self.log = log
        self.uapiDirectory = uapiDirectory
    }

    deinit { stopAll() }

    /// Starts what is new or changed and stops what is gone. The UDP socket carries the
    /// bypass mark (unless the file sets FwMark), so no profile rule ever routes it; an exit
    /// hop's carries its entry's mark (MultihopRules), and a new mark is a new tunnel.
    /// `demand`: the settings of on-demand tunnels, by interface (the others are always up).
    public func reconcile(_ wanted: [String: TunnelFiles.Loaded], policy: Policy, netlink: Rtnetlink,
                   demand: [String: TunnelDemand.Settings] = [:]) {
        let marks = wanted.mapValues { loaded in
            policy.profile(named: loaded.profile).map { MultihopRules.socketMark($0, in: policy, fileMark: loaded.config.interface.fwmark) } ?? policy.routing.bypassMark
        }
        for (interface, entry) in running where wanted[interface]?.text != entry.text || entry.tunnel.interfaceWasDeleted
            || entry.tunnel.engine.status.fwmark != marks[interface]
            || (wanted[interface] != nil && entry.demand != demand[interface] ?? .alwaysUp) {
            entry.tunnel.stop()
            if wanted[interface] != nil { schedules[interface] = entry.tunnel.engine.reconnectSchedules }
            running[interface] = nil
            if wanted[interface] != nil && entry.tunnel.interfaceWasDeleted {
                // Someone deleted the interface (the engine ended with it): start it again.
                log.warning("built-in tunnel \(interface) lost its interface; starting it again")
            } else {
                log.info("built-in tunnel \(interface) stopped")
            }
        }
        for (interface, loaded) in wanted.sorted(by: { $0.key < $1.key }) where running[interface] == nil {
            do {
                let file = loaded.config
                var configuration = try EngineConfiguration.from(file)
                configuration.fwmark = marks[interface]
                let mtu = file.interface.mtu ?? (policy.profile(named: loaded.profile)?.via != nil ? MultihopRules.exitMTU : 1420)
                var options = RunningTunnel.Options(interfaceName: interface, mtu: Int(mtu), uapiDirectory: uapiDirectory,
                                                    events: { [log] event in log.info("built-in tunnel \(interface): \(event)") })
                options.demand = demand[interface] ?? .alwaysUp
                let tunnel = try RunningTunnel(configuration: configuration, options: options)
                try TunnelInterface.configure(name: interface, addresses: file.interface.addresses, mtu: mtu,
                                              routes: [], netlink: netlink)
                tunnel.engine.adoptReconnectSchedules(schedules.removeValue(forKey: interface) ?? [:])
                tunnel.start()
                running[interface] = (tunnel, loaded.text, options.demand)
                log.notice("built-in tunnel \(interface) for profile \(loaded.profile): UDP port \(tunnel.udp.port), \(file.peers.count == 1 ? "peer" : "peers") \(file.peers.map { "\($0.publicKey)\($0.endpoint.map { " at \($0)" } ?? "")" }.joined(separator: ", "))")
            } catch {
                log.error("built-in tunnel \(interface) for profile \(loaded.profile) did not start: \(error); the profile stays fail-closed (killswitch) until a reload")
            }
        }
    }

    public var isRunningAny: Bool { !running.isEmpty }

    public func tunnel(_ interface: String) -> RunningTunnel? { running[interface]?.tunnel }

    public var runningInterfaces: [String] { running.keys.sorted() }

    /// A built-in tunnel's own transport: its socket is ours (and carries the bypass mark).
    public func transport(interface: String) -> TunnelTransport {
        guard let tunnel = running[interface]?.tunnel else {
            return TunnelTransport(source: .builtIn, detail: "not running")
        }
        let status = tunnel.engine.status
        return TunnelTransport(source: .builtIn, udpPort: tunnel.udp.port, owner: geteuid(), fwmark: status.fwmark,
                               endpoints: status.peers.compactMap(\.endpoint))
    }

    public func status(interface: String) -> EngineStatus? { running[interface]?.tunnel.engine.status }
    public func engine(interface: String) -> Engine? { running[interface]?.tunnel.engine }

    public func stopAll() {
        for (_, entry) in running { entry.tunnel.stop() }
        running = [:]
    }
}

/// on_demand, idle and `vpnctl up/down` (TunnelDemand): what vpnd tells its tunnels.
extension BuiltInTunnels: DemandTarget {
    public func demandState(interface: String) -> TunnelDemand? { tunnel(interface)?.demandState }

    public func membersChanged(interface: String, present: Bool, why: TunnelDemand.Reason, now: MonotonicInstant) {
        tunnel(interface)?.membersChanged(present: present, why: why, now: now)
    }

    /// false: no such tunnel runs (its file did not start).
    public func hold(interface: String, up: Bool, now: MonotonicInstant) -> Bool {
        guard let tunnel = tunnel(interface) else { return false }
        if up { tunnel.holdUp(now: now) } else { tunnel.holdDown(now: now) }
        return true
    }

    /// A reload ends every `vpnctl up/down` hold.
    public func releaseHolds(now: MonotonicInstant) {
        for interface in runningInterfaces { tunnel(interface)?.releaseHold(now: now) }
    }
}
