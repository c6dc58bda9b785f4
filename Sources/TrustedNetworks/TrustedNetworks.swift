import Addresses
import Control
import Facts
import Monotonic
import Netlink
import Plan
import Policy
import ServiceSupport
import TunnelFiles

/// Trusted networks at the daemon's edge: the host's networks are read with the other
/// facts (`read`, handed to FactsReader), the planner turns each verdict into kernel state,
/// and here, after an apply, a flip is logged (`applied`), the built-in tunnels of profiles
/// that step aside or block are not run (`tunnelFiles`), and status says which rule holds
/// since when. What it remembers between evaluations: each profile's verdict and since when
/// it is in force, and the host's networks as last read.
public final class TrustedNetworks {
    /// An ARP or neighbour solicitation is answered in milliseconds on a LAN: a gateway
    /// whose address was asked for is looked at again this soon rather than at the next
    /// periodic check (its answer sends no event vpnd listens to).
    public static let gatewayRelook: Swift.Duration = .milliseconds(200)

    private let source: any NetworkSource
    private let log: Log
    private var verdicts: [String: (verdict: TrustedVerdict, since: WallClock)] = [:]
    /// The host's networks as last read, for status and the flips' log lines.
    public private(set) var network = NetworkFacts()
    /// The gateway whose resolution was asked for last, so that it is looked at again once
    /// soon after, not every time.
    private var resolving: String?
    /// When the networks are to be read again for that gateway; taken by the daemon.
    private var relook: MonotonicInstant?

    /// Reads this machine's networks, asking the kernel to resolve a gateway it has no
    /// neighbour entry for.
    public convenience init(netlink: Rtnetlink, resolvConf: String, log: Log) {
        var reader = NetworkFactsReader(netlink: netlink, resolvConf: resolvConf, wireless: try? WirelessNetwork())
        reader.resolve = true
        self.init(source: reader, log: log)
    }

    public init(source: any NetworkSource, log: Log) {
        self.source = source
        self.log = log
    }

    /// The host's networks now (FactsReader's `network`), kept for status. A gateway without
    /// a known link-layer address, other than the one asked about last, asks for a re-look
    /// `gatewayRelook` after `now`.
    public func read(now: MonotonicInstant) -> NetworkFacts {
        let network = source.read()
        self.network = network
        let unresolved = network.gatewayMAC == nil ? network.gateway.map { "\($0)%\(network.interface ?? "")" } : nil
        if let unresolved, unresolved != resolving { relook = now + Self.gatewayRelook }
        resolving = unresolved
        return network
    }

    /// When the daemon is to read the facts again (and apply), if a read asked for it since
    /// the last time this was taken; asked once per gateway.
    public func takeRelook() -> MonotonicInstant? {
        defer { relook = nil }
        return relook
    }

    /// After an apply: logs each profile whose action changed, with the rule and the values.
    /// Returns the lines logged.
    @discardableResult
    public func applied(facts: RuntimeFacts, policy: Policy, wall: WallClock) -> [String] {
        var said: [String] = []
        for name in verdicts.keys where policy.profile(named: name) == nil { verdicts[name] = nil }
        for profile in policy.profiles {
            guard let verdict = facts.trusted[profile.name] else {
                if let held = verdicts[profile.name]?.verdict.heldBy {
                    said.append("trusted networks: profile \(profile.name) connects again through its tunnel: profile \(held.entry) connects")
                }
                verdicts[profile.name] = nil
                continue
            }
            let previous = verdicts[profile.name]
            guard previous?.verdict != verdict else { continue }
            // The same action by another rule (or other values) keeps its "since".
            let since = previous?.verdict.action == verdict.action ? previous?.since ?? wall : wall
            verdicts[profile.name] = (verdict, since)
            let seen = "default route \(network.interface ?? "none")" + (network.gateway.map { " via \($0)" } ?? "")
                + " (\(network.gatewayMAC ?? "gateway MAC unknown"))" + (network.ssid.map { ", SSID \"\($0)\"" } ?? "")
                + (network.searchDomains.isEmpty ? "" : ", search \(network.searchDomains.joined(separator: " "))")
            let effect = switch verdict.action {
            case .connect: "through its tunnel"
            case .disconnect: "members go direct (no tunnel, no killswitch)"
            case .block: "members held (killswitch, nothing through the tunnel or direct)"
            }
            said.append("trusted networks: profile \(profile.name) \(verdict.action.rawValue)s, \(effect): \(verdict.reason); \(seen)")
        }
        for line in said { log.notice(line) }
        return said
    }

    /// The action a trusted network has the profile take now; nil: none (it connects).
    public func action(of profile: String) -> TrustedAction? {
        verdicts[profile]?.verdict.action
    }

    /// The built-in tunnels to run: not those of profiles a trusted network disconnects or blocks.
    public func tunnelFiles(_ files: [String: TunnelFiles.Loaded]) -> [String: TunnelFiles.Loaded] {
        files.filter { _, loaded in (action(of: loaded.profile) ?? .connect) == .connect }
    }

    /// `wall`: now, the "since" of a profile no rule has moved yet.
    public func status(_ profile: Profile, wall: WallClock) -> TrustedStatus? {
        let entry = verdicts[profile.name]
        guard !profile.trusted.isEmpty || entry?.verdict.heldBy != nil else { return nil }
        let verdict = entry?.verdict ?? TrustedVerdict(action: .connect)
        return TrustedStatus(action: verdict.action.rawValue, rule: verdict.rule, ruleLocation: verdict.location?.description,
                             matched: verdict.matched, since: (entry?.since ?? wall).secondsSinceEpoch, rules: profile.trusted.count,
                             network: network,
                             heldBy: verdict.heldBy?.entry, heldByAction: verdict.heldBy?.action.rawValue)
    }
}
