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
    public func followNetwork(_ policy: Policy, netlink: Rtnetlink, now: MonotonicInstant, wall: WallClock) {
        let addresses = (try? netlink.addresses()) ?? []
        for profile in policy.profiles where profile.tunnel.isBuiltIn {
            let interface = profile.tunnel.interfaceName
            guard let engine = engine(interface: interface) else { uplinks[interface] = nil; continue }
            engine.setReconnectPolicy(Self.reconnectPolicy(profile.reconnect))
            let status = engine.status
            var seen: [Endpoint: Uplink] = [:]
            for endpoint in Set(status.peers.compactMap(\.endpoint)) {
                guard let route = try? netlink.lookup(endpoint.address, mark: status.fwmark) else { seen[endpoint] = .offline; continue }
                seen[endpoint] = Uplink(interfaceIndex: route.interfaceIndex, gateway: route.gateway, source: route.source,
                                       addresses: addresses.filter { $0.interfaceIndex == route.interfaceIndex }.map(\.prefix.address).sorted())
            }
            // A tunnel that is down on demand (or held down) sends nothing on a network change
            // either: its first handshake comes when it is needed, over the new network.
            let running = demandState(interface: interface)?.isRunning ?? true
            if running, let before = uplinks[interface], UplinkChange.changed(before: before, after: seen) {
                log.info("built-in tunnel \(interface): the network changed; new handshake")
                networkChanges[interface] = now
                engine.networkChanged(now: now, wall: wall)
            }
            uplinks[interface] = seen
        }
    }

    /// Each running tunnel's look for the server choice; a network change is handed over once.
    public func looks(now: MonotonicInstant) -> [String: ServerFailover.Look] {
        var looks: [String: ServerFailover.Look] = [:]
        for interface in runningInterfaces {
            guard let engine = engine(interface: interface) else { continue }
            looks[interface] = ServerFailover.Look(engine: engine, now: now, networkChanged: networkChanges.removeValue(forKey: interface))
        }
        return looks
    }

    /// A profile's `reconnect` as the engine's schedule (nil: WireGuard's own).
    public static func reconnectPolicy(_ reconnect: Reconnect?) -> ReconnectPolicy? {
        reconnect.map {
            .backoff(minimum: .init(nanoseconds: $0.minimum.milliseconds * 1_000_000),
                     maximum: .init(nanoseconds: $0.maximum.milliseconds * 1_000_000))
        }
    }

    /// What `vpnctl status` shows of the engine's retries.
    public func reconnectReport(interface: String, now: MonotonicInstant) -> ReconnectReport? {
        engine(interface: interface).map { Self.reconnectReport($0, now: now) }
    }

    static func reconnectReport(_ engine: Engine, now: MonotonicInstant) -> ReconnectReport {
        let peers = engine.reconnection(now: now)
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
