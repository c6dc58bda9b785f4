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
        return ReconnectReport(schedule: Self.scheduleStatus(engine.reconnectPolicyInForce), peers: peers.map {
            let (error, detail) = Self.errorToken($0.lastError)
            return ReconnectPeerReport(publicKey: $0.publicKey.base64, attempts: $0.attempts, lastError: error, lastErrorDetail: detail,
                                       nextTry: $0.nextTry.map { Double($0.nanoseconds) / 1e9 })
        })
    }

    static func scheduleStatus(_ policy: ReconnectPolicy) -> ReconnectScheduleStatus {
        func seconds(_ d: MonotonicInstant.Duration) -> Double { Double(d.nanoseconds) / 1e9 }
        return ReconnectScheduleStatus(kind: policy.isProtocolDefault ? ReconnectScheduleStatus.wireguard : ReconnectScheduleStatus.backoff,
                                       minSeconds: seconds(policy.minimum), maxSeconds: seconds(policy.maximum),
                                       stormLimitPerMinute: policy.stormLimit,
                                       giveUpSeconds: policy.maximumRetries.map { seconds(policy.minimum * $0) })
    }

    /// The status's token for a handshake error, and the errno's words of a failed send.
    static func errorToken(_ error: ReconnectError?) -> (String?, String?) {
        switch error {
        case nil: (nil, nil)
        case .noResponse: (ReconnectPeerReport.noResponse, nil)
        case let .sendFailed(text): (ReconnectPeerReport.sendFailed, text)
        case .cookieRequired: (ReconnectPeerReport.cookieRequired, nil)
        case .stormLimited: (ReconnectPeerReport.stormLimit, nil)
        }
    }
}
