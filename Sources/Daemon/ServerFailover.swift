import Control
import Glibc
import Netlink
import Plan
import Policy
import Routing
import TunnelFiles
import WireGuard
import ServiceSupport

/// vpnd's side of a built-in tunnel's server choice (ServerList, ServerChoice): at each
/// apply it looks at the engine's latest handshake, hands the tunnels the file of each
/// profile's chosen server (a new server is a new file: BuiltInTunnels starts the tunnel
/// afresh on the same interface, the killswitch holding members meanwhile) and then asks
/// the engine for a handshake where the choice wants one. It uses the engine's public face
/// only: its status (latest handshake), its reconnection report (initiations since the
/// last handshake, whether a retry is scheduled) and `keepalive` (which starts a handshake
/// when there is no session).
final class ServerFailover {
    private struct Entry {
        var texts: [String]
        var paths: [String]
        var choice: ServerChoice
    }

    private var entries: [String: Entry] = [:]
    private var probes: Set<String> = []
    private var network: String?
    private let log: Log
    private let rtnl: Rtnetlink

    init(log: Log, rtnl: Rtnetlink) {
        self.log = log
        self.rtnl = rtnl
    }

    /// One look at each tunnel with a server list; the files to run, each profile's chosen one.
    func chosen(_ files: [String: TunnelFiles.Loaded], policy: Policy, tunnels: BuiltInTunnels) -> [String: TunnelFiles.Loaded] {
        let now = Self.wallNow()
        let networkChanged = followNetwork(fastest: entries.values.contains { $0.choice.mode == .fastest })
        var result = files
        var kept: [String: Entry] = [:]
        for (interface, loaded) in files.sorted(by: { $0.key < $1.key }) {
            guard let list = policy.profile(named: loaded.profile)?.servers, !loaded.servers.isEmpty else { continue }
            var entry = entries[interface].flatMap { $0.texts == loaded.servers.map(\.text) && $0.choice.mode == list.mode && $0.choice.failoverAfter == UInt64(list.failoverAfter) ? $0 : nil }
                ?? Entry(texts: loaded.servers.map(\.text), paths: loaded.servers.map(\.path),
                         choice: ServerChoice(mode: list.mode, count: loaded.servers.count, failoverAfter: list.failoverAfter))
            let before = (entry.choice.current, entry.choice.reason)
            let peer = tunnels.status(interface: interface)?.peers.first
            let last = peer?.lastHandshake.map { Double($0.seconds) + Double($0.nanoseconds) / 1e9 }
            var action = entry.choice.step(now: now, lastHandshake: last, failed: Self.failedInitiations(tunnels.engine(interface: interface)))
            if networkChanged && entry.choice.mode == .fastest && entry.choice.isUp {
                action = entry.choice.networkChanged(now: now)
            }
            switch action {
            case .none: break
            case .probe: probes.insert(interface)
            case .use: probes.insert(interface)
            }
            if entries[interface] == nil || entry.choice.current != before.0 || entry.choice.reason != before.1 {
                log.notice("built-in tunnel \(interface) for profile \(loaded.profile): server \(entry.choice.current + 1) of \(entry.paths.count) (\(entry.paths[entry.choice.current])): \(entry.choice.reason)")
            }
            let server = loaded.servers[entry.choice.current]
            result[interface]?.text = server.text
            result[interface]?.config = server.config
            kept[interface] = entry
        }
        entries = kept
        return result
    }

    /// After the tunnels were reconciled: the handshakes the choices asked for.
    func probe(_ tunnels: BuiltInTunnels) {
        defer { probes = [] }
        guard !probes.isEmpty else { return }
        var mono = timespec(), wall = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        clock_gettime(CLOCK_REALTIME, &wall)
        for interface in probes.sorted() {
            guard let engine = tunnels.engine(interface: interface), let peer = engine.status.peers.first else { continue }
            // An on-demand tunnel that is down sends nothing, not even a probe: it is measured
            // when it comes up.
            if let demand = tunnels.demandState(interface: interface), !demand.isRunning { continue }
            engine.keepalive(peer.publicKey, now: Timestamp(nanoseconds: UInt64(mono.tv_sec) * 1_000_000_000 + UInt64(mono.tv_nsec)),
                             wall: WallClock(seconds: Int64(wall.tv_sec), nanoseconds: Int32(wall.tv_nsec)))
        }
    }

    /// Which server a profile's tunnel uses and why, for status.
    func status(interface: String) -> ServerChoiceStatus? {
        guard let entry = entries[interface] else { return nil }
        return ServerChoiceStatus(mode: entry.choice.mode.rawValue, files: entry.paths, current: entry.paths[entry.choice.current],
                                  state: entry.choice.isUp ? "up" : "trying", reason: entry.choice.reason,
                                  roundTripsMs: entry.choice.roundTrips.map { $0.flatMap { $0.isFinite ? Int(($0 * 1000).rounded()) : nil } })
    }

    /// Whether the host's network changed since the last look: its default routes and their
    /// interfaces' addresses (not the tunnels': our own restarts must not count). Read only
    /// while a profile chooses the fastest server.
    private func followNetwork(fastest: Bool) -> Bool {
        guard fastest else { network = nil; return false }
        guard let v4 = try? rtnl.routes(ipv4: true, table: 254), let v6 = try? rtnl.routes(ipv4: false, table: 254),
              let addresses = try? rtnl.addresses() else { return false }
        let defaults = (v4 + v6).filter { $0.destination.length == 0 }
        let indexes = Set(defaults.compactMap { route -> Int32? in if case let .device(index) = route.kind { return index } else { return nil } })
        let now = defaults.map(\.description).sorted().joined(separator: ";") + "|"
            + addresses.filter { indexes.contains($0.interfaceIndex) }.map(\.prefix.description).sorted().joined(separator: ",")
        defer { network = now }
        return network != nil && network != now
    }

    /// The engine's unanswered initiations to its (one) server since the last handshake.
    private static func failedInitiations(_ engine: Engine?) -> UInt64 {
        var mono = timespec()
        clock_gettime(CLOCK_MONOTONIC, &mono)
        guard let peer = engine?.reconnection(now: Timestamp(nanoseconds: UInt64(mono.tv_sec) * 1_000_000_000 + UInt64(mono.tv_nsec))).first else { return 0 }
        return ServerChoice.failedInitiations(attempts: peer.attempts, retryScheduled: peer.nextTry != nil)
    }

    private static func wallNow() -> Double {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        return Double(wall.tv_sec) + Double(wall.tv_nsec) / 1e9
    }
}
