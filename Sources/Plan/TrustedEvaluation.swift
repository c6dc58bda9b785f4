import Addresses
import Policy

/// A profile's action on the networks it is on, and why.
public struct TrustedVerdict: Hashable, Sendable {
    public var action: TrustedAction
    /// 1-based number of the rule that matched; nil: none did (connect).
    public var rule: Int?
    public var location: SourceLocation?
    /// The fields that matched, key -> the value the host has (e.g. "gateway_mac" -> "02:...").
    public var matched: [String: String]
    /// A multihop exit held because a profile its transport goes through (tunnel.via, along
    /// the chain) disconnects or blocks (HopHold.swift); nil for a profile's own verdict.
    public var heldBy: HopHold?

    public init(action: TrustedAction, rule: Int? = nil, location: SourceLocation? = nil, matched: [String: String] = [:], heldBy: HopHold? = nil) {
        self.action = action
        self.rule = rule
        self.location = location
        self.matched = matched
        self.heldBy = heldBy
    }

    /// "rule 2 (/etc/vpnexec/policy.d/10-work.toml:7:11): gateway_mac = 02:00:5e:00:53:01"
    public var reason: String {
        if let heldBy { return heldBy.reason }
        guard let rule else { return "no rule matched" }
        let fields = TrustedMatch.keys.compactMap { key in matched[key].map { "\(key) = \($0)" } }.joined(separator: ", ")
        return "rule \(rule)" + (location.map { " (\($0))" } ?? "") + ": " + fields
    }
}

/// rules + facts -> verdict. Pure.
public enum TrustedEvaluator {
    /// The first rule whose every field matches; connect when none does.
    public static func verdict(_ rules: [TrustedRule], _ facts: NetworkFacts) -> TrustedVerdict {
        for (number, rule) in rules.enumerated() {
            if let matched = matches(rule.match, facts) {
                return TrustedVerdict(action: rule.action, rule: number + 1, location: rule.location, matched: matched)
            }
        }
        return TrustedVerdict(action: .connect)
    }

    /// Profiles with rules -> their verdict; profiles without have none (they connect).
    public static func verdicts(_ policy: Policy, _ facts: NetworkFacts) -> [String: TrustedVerdict] {
        var verdicts: [String: TrustedVerdict] = [:]
        for profile in policy.profiles where !profile.trusted.isEmpty {
            verdicts[profile.name] = verdict(profile.trusted, facts)
        }
        return HopHold.apply(policy, to: verdicts)
    }

    /// The matched fields and the host's values, or nil if a field does not match.
    static func matches(_ match: TrustedMatch, _ facts: NetworkFacts) -> [String: String]? {
        var matched: [String: String] = [:]
        if let wanted = match.interface {
            guard let interface = facts.interface else { return nil }
            let ok = wanted.hasSuffix("*") ? interface.hasPrefix(wanted.dropLast()) : interface == wanted
            guard ok else { return nil }
            matched["interface"] = interface
        }
        if let wanted = match.gatewayMAC {
            guard let mac = facts.gatewayMAC, mac == wanted else { return nil }
            matched["gateway_mac"] = mac + (facts.gateway.map { " (gateway \($0))" } ?? "")
        }
        if let wanted = match.searchDomain {
            guard facts.searchDomains.contains(wanted) else { return nil }
            matched["search_domain"] = wanted
        }
        if let wanted = match.ssid {
            guard let ssid = facts.ssid, ssid == wanted else { return nil }
            matched["ssid"] = ssid
        }
        return matched
    }
}

extension TrustedEvaluator {
    /// Comment lines for `vpnctl plan`: a plan holds for the networks the host is on, so it
    /// says which verdicts it was made for (empty without rules).
    public static func planHeader(_ facts: RuntimeFacts) -> String {
        facts.trusted.sorted { $0.key < $1.key }.map { "# trusted networks: profile \($0.key) \($0.value.action.rawValue) (\($0.value.reason))\n" }.joined()
    }
}

extension RuntimeFacts {
    /// The trusted-network action in force for a profile (connect without rules).
    public func trustedAction(_ profile: Profile) -> TrustedAction { trusted[profile.name]?.action ?? .connect }
}
