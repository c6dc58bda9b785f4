import Addresses
import Control
import Facts
import Glibc
import Monotonic
import Plan
import Policy
import TunnelFiles

/// What vpnd remembers of trusted networks between evaluations: each profile's verdict and
/// since when it is in force, and the host's networks as last read.
struct TrustedState {
    var verdicts: [String: (verdict: TrustedVerdict, since: Double)] = [:]
    var network = NetworkFacts()
    /// The gateway whose resolution was asked for last, so that it is looked at again once
    /// soon after (its answer sends no event vpnd listens to), not every time.
    var resolving: String?
}

/// Trusted networks at the daemon's edge: the host's networks are read with the other
/// facts (FactsReader.network), the planner turns each verdict into kernel state, and here
/// a flip is logged, the built-in tunnels of profiles that step aside or block are not run,
/// and status says which rule holds since when.
extension Daemon {
    /// The host's networks now, kept for status.
    func readNetwork() -> NetworkFacts {
        var reader = NetworkFactsReader(netlink: rtnl, resolvConf: options.resolvConfPath, wireless: trustedWireless)
        reader.resolve = true
        let network = reader.read()
        trustedState.network = network
        let unresolved = network.gatewayMAC == nil ? network.gateway.map { "\($0)%\(network.interface ?? "")" } : nil
        if let unresolved, unresolved != trustedState.resolving, let loop {
            // An ARP or neighbour solicitation is answered in milliseconds on a LAN: look
            // again then rather than at the next periodic check.
            _ = loop.after(.milliseconds(200)) { [unowned self] in try? applyPolicy() }
        }
        trustedState.resolving = unresolved
        return network
    }

    /// After an apply: logs each profile whose action changed, with the rule and the values.
    func noteTrusted(_ facts: RuntimeFacts) {
        let now = WallClock.now().secondsSinceEpoch
        for name in trustedState.verdicts.keys where policy.profile(named: name) == nil { trustedState.verdicts[name] = nil }
        for profile in policy.profiles {
            guard let verdict = facts.trusted[profile.name] else {
                if let held = trustedState.verdicts[profile.name]?.verdict.heldBy {
                    log.notice("trusted networks: profile \(profile.name) connects again through its tunnel: profile \(held.entry) connects")
                }
                trustedState.verdicts[profile.name] = nil
                continue
            }
            let previous = trustedState.verdicts[profile.name]
            guard previous?.verdict != verdict else { continue }
            // The same action by another rule (or other values) keeps its "since".
            let since = previous?.verdict.action == verdict.action ? previous?.since ?? now : now
            trustedState.verdicts[profile.name] = (verdict, since)
            let network = trustedState.network
            let seen = "default route \(network.interface ?? "none")" + (network.gateway.map { " via \($0)" } ?? "")
                + " (\(network.gatewayMAC ?? "gateway MAC unknown"))" + (network.ssid.map { ", SSID \"\($0)\"" } ?? "")
                + (network.searchDomains.isEmpty ? "" : ", search \(network.searchDomains.joined(separator: " "))")
            let effect = switch verdict.action {
            case .connect: "through its tunnel"
            case .disconnect: "members go direct (no tunnel, no killswitch)"
            case .block: "members held (killswitch, nothing through the tunnel or direct)"
            }
            log.notice("trusted networks: profile \(profile.name) \(verdict.action.rawValue)s, \(effect): \(verdict.reason); \(seen)")
        }
    }

    /// The built-in tunnels to run: not those of profiles a trusted network disconnects or blocks.
    func trustedTunnelFiles() -> [String: TunnelFiles.Loaded] {
        tunnelFiles.filter { _, loaded in (trustedState.verdicts[loaded.profile]?.verdict.action ?? .connect) == .connect }
    }

    func trustedStatus(_ profile: Profile) -> TrustedStatus? {
        let entry = trustedState.verdicts[profile.name]
        guard !profile.trusted.isEmpty || entry?.verdict.heldBy != nil else { return nil }
        let verdict = entry?.verdict ?? TrustedVerdict(action: .connect)
        return TrustedStatus(action: verdict.action.rawValue, rule: verdict.rule, ruleLocation: verdict.location?.description,
                             matched: verdict.matched, since: entry?.since ?? WallClock.now().secondsSinceEpoch, rules: profile.trusted.count,
                             network: trustedState.network,
                             heldBy: verdict.heldBy?.entry, heldByAction: verdict.heldBy?.action.rawValue)
    }
}
