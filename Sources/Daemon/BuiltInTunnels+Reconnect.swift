import Addresses
import Control
import Glibc
import Monotonic
import Netlink
import Policy
import WireGuard

/// The reconnection strategy's daemon side: each built-in tunnel's `reconnect` policy, and
/// a handshake at once when the network its UDP rides on changes.
extension BuiltInTunnels {
    /// Applies the profiles' `reconnect` to the running engines, then compares each tunnel's
    /// uplinks with the last look; a changed one gets new handshakes (the engine keeps the
    /// protocol's floor and the storm limit).
    func followNetwork(_ policy: Policy, netlink: Rtnetlink) {
        let addresses = (try? netlink.addresses()) ?? []
        for profile in policy.profiles where profile.tunnel.isBuiltIn {
            let interface = profile.tunnel.interfaceName
            guard let engine = engine(interface: interface) else { uplinks[interface] = nil; continue }
            engine.setReconnectPolicy(profile.reconnect.map {
                .backoff(minimum: .init(nanoseconds: $0.minimum.milliseconds * 1_000_000),
                         maximum: .init(nanoseconds: $0.maximum.milliseconds * 1_000_000))
            })
            let status = engine.status
            var now: [Endpoint: Uplink] = [:]
            for endpoint in Set(status.peers.compactMap(\.endpoint)) {
                guard let route = try? netlink.lookup(endpoint.address, mark: status.fwmark) else { now[endpoint] = .offline; continue }
                now[endpoint] = Uplink(interfaceIndex: route.interfaceIndex, gateway: route.gateway, source: route.source,
                                       addresses: addresses.filter { $0.interfaceIndex == route.interfaceIndex }.map(\.prefix.address).sorted())
            }
            // A tunnel that is down on demand (or held down) sends nothing on a network change
            // either: its first handshake comes when it is needed, over the new network.
            let running = demandState(interface: interface)?.isRunning ?? true
            if running, let before = uplinks[interface], UplinkChange.changed(before: before, after: now) {
                log.info("built-in tunnel \(interface): the network changed; new handshake")
                networkChanges[interface] = WallClock.now().secondsSinceEpoch
                engine.networkChanged(now: .now(), wall: .now())
            }
            uplinks[interface] = now
        }
    }

    /// What `vpnctl status` shows of the engine's retries.
    func reconnectReport(interface: String) -> ReconnectReport? {
        guard let engine = engine(interface: interface) else { return nil }
        let peers = engine.reconnection(now: .now())
        return ReconnectReport(schedule: engine.reconnectPolicyInForce.description, peers: peers.map {
            ReconnectPeerReport(publicKey: $0.publicKey.base64, attempts: $0.attempts, lastError: $0.lastError?.description,
                                nextTry: $0.nextTry.map { Double($0.nanoseconds) / 1e9 })
        })
    }
}
