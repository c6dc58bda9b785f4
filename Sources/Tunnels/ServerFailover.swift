import Control
import Glibc
import Monotonic
import Policy
import TunnelFiles
import WireGuard
import WireGuardDevice
import ServiceSupport

/// vpnd's side of a built-in tunnel's server choice (ServerList, ServerChoice): at each
/// apply it looks at the engine's latest handshake, hands the tunnels the file of each
/// profile's chosen server (a new server is a new file: BuiltInTunnels starts the tunnel
/// afresh on the same interface, the killswitch holding members meanwhile; another
/// Endpoint of the same file is set on the running engine, `setEndpoint`, so nothing is
/// torn down) and then asks the engine for a handshake where the choice wants one. It uses the engine's public face
/// only: its status (latest handshake), its reconnection report (initiations since the
/// last handshake, whether a retry is scheduled) and `keepalive` (which starts a handshake
/// when there is no session).
public final class ServerFailover {
    private struct Entry {
        var texts: [String]
        var paths: [String]
        var choice: ServerChoice
        /// The engine that runs the choice's server (weak: a stopped one is gone) and which
        /// server's endpoint it has: another Endpoint of the same file is set on it.
        weak var engine: Engine?
        var engineServer = 0
    }

    private var entries: [String: Entry] = [:]
    private var probes: Set<String> = []
    private let log: Log

    public init(log: Log) {
        self.log = log
    }

    /// One look at each tunnel with a server list; the files to run, each profile's chosen
    /// one. `looks`: each running tunnel's engine as it is now (BuiltInTunnels.looks).
    public func chosen(_ files: [String: TunnelFiles.Loaded], policy: Policy, looks: [String: Look], now: MonotonicInstant) -> [String: TunnelFiles.Loaded] {
        var result = files
        var kept: [String: Entry] = [:]
        for (interface, loaded) in files.sorted(by: { $0.key < $1.key }) {
            guard let profile = policy.profile(named: loaded.profile), !loaded.servers.isEmpty,
                  let list = profile.servers ?? (loaded.servers.count > 1 ? ServerList(files: [loaded.servers[0].path], mode: .failover, location: profile.location) : nil)
            else { continue }
            var entry = entries[interface].flatMap { $0.texts == loaded.servers.map(\.text) && $0.paths == loaded.servers.map(\.name) && $0.choice.mode == list.mode && $0.choice.failoverAfter == UInt64(list.failoverAfter) ? $0 : nil }
                ?? Entry(texts: loaded.servers.map(\.text), paths: loaded.servers.map(\.name),
                         choice: ServerChoice(mode: list.mode, count: loaded.servers.count, failoverAfter: list.failoverAfter),
                         // The running engine keeps its endpoint across a new choice (a changed mode).
                         engine: entries[interface]?.engine, engineServer: entries[interface]?.engineServer ?? 0)
            let before = (entry.choice.current, entry.choice.reason)
            let look = looks[interface] ?? Look()
            var action = entry.choice.step(now: now, lastHandshake: look.lastHandshake, failed: look.failed)
            // The reconnection's signal (UplinkChange: interface, gateway, source, addresses
            // toward the server), taken as it was seen: its handshake left then, so it is the
            // first measured.
            if let changed = look.networkChanged, entry.choice.mode == .fastest && entry.choice.isUp {
                action = entry.choice.networkChanged(now: changed)
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

    /// After the tunnels were reconciled: another Endpoint of the running file set on its
    /// engine, and the handshakes the choices asked for.
    public func probe(_ tunnels: BuiltInTunnels, files: [String: TunnelFiles.Loaded], now: MonotonicInstant, wall: WallClock) {
        defer { probes = [] }
        var moved: Set<String> = []
        for (interface, entry) in entries.sorted(by: { $0.key < $1.key }) {
            guard let engine = tunnels.engine(interface: interface) else { continue }
            let current = entry.choice.current
            // A new engine started with the chosen server's file as it is (chosen()).
            guard entry.engine === engine else {
                entries[interface]?.engine = engine
                entries[interface]?.engineServer = current
                continue
            }
            guard entry.engineServer != current, let servers = files[interface]?.servers, servers.indices.contains(current),
                  case let server = servers[current], let peer = server.config.peers.first, let spec = peer.endpoint else { continue }
            do {
                let endpoint = try EndpointResolver.resolve(spec, file: server.path, line: peer.line)
                engine.setEndpoint(endpoint, of: peer.publicKey)
                entries[interface]?.engineServer = current
                moved.insert(interface)
            } catch {
                log.error("built-in tunnel \(interface): \(error); it stays on its endpoint until the next server")
            }
        }
        for interface in probes.union(moved).sorted() {
            guard let engine = tunnels.engine(interface: interface), let peer = engine.status.peers.first else { continue }
            // An on-demand tunnel that is down sends nothing, not even a probe: it is measured
            // when it comes up.
            if let demand = tunnels.demandState(interface: interface), !demand.isRunning { continue }
            // Another endpoint: a handshake there now, even with a session (it was the old
            // server's); the engine keeps its floor and storm limit.
            if moved.contains(interface) {
                engine.networkChanged(now: now, wall: wall)
                // Held back by the floor: no initiation counted yet, the first due in nextTry.
                if let peer = engine.reconnection(now: now).first, peer.attempts == 0, let wait = peer.nextTry {
                    entries[interface]?.choice.initiationLeaves(at: now + wait)
                }
            } else {
                engine.keepalive(peer.publicKey, now: now, wall: wall)
            }
        }
    }

    /// Which server a profile's tunnel uses and why, for status.
    public func status(interface: String) -> ServerChoiceStatus? {
        guard let entry = entries[interface] else { return nil }
        return ServerChoiceStatus(mode: entry.choice.mode.rawValue, files: entry.paths, current: entry.paths[entry.choice.current],
                                  state: entry.choice.isUp ? "up" : "trying", reason: entry.choice.reason,
                                  roundTripsMs: entry.choice.roundTrips.map { $0?.duration.map(ServerChoice.milliseconds) })
    }
}
