import Policy

/// Multihop meets trusted networks. An exit's transport carries its entry's mark, and a
/// `disconnect` verdict on the entry empties the entry's table: the exit's encrypted UDP
/// would then follow the main table and reach the exit's server from the host's own
/// address, which multihop promises never happens. So an exit whose entry (or any profile
/// further along its chain of `tunnel.via`) disconnects or blocks is itself blocked: its
/// tunnel does not run (it is not a connected profile), its members are held by its
/// killswitch, and what its socket still sends is dropped first in the entry's
/// egress chain (MultihopRules). An exit's own `disconnect` or `block` stays its own.
public struct HopHold: Hashable, Sendable {
    /// The profile along the chain that does not connect.
    public var entry: String
    /// Its action: disconnect or block.
    public var action: TrustedAction

    public init(entry: String, action: TrustedAction) {
        self.entry = entry
        self.action = action
    }

    public var reason: String {
        "profile \(entry), which carries this tunnel's transport (tunnel.via), \(action.rawValue)s: "
            + "held so that this tunnel's server never sees the host's address"
    }

    /// The first profile along `profile`'s chain of entries whose action is not connect.
    public static func holding(_ profile: Profile, in policy: Policy, action: (Profile) -> TrustedAction) -> HopHold? {
        var seen: Set<String> = [profile.name]
        var next = profile.via.flatMap { policy.profile(named: $0.entry) }
        while let hop = next, seen.insert(hop.name).inserted {
            let hopAction = action(hop)
            if hopAction != .connect { return HopHold(entry: hop.name, action: hopAction) }
            next = hop.via.flatMap { policy.profile(named: $0.entry) }
        }
        return nil
    }

    /// The profiles' own verdicts -> the verdicts in force: each exit that connects by its own
    /// rules (or has none) but whose chain holds it is blocked, saying by which profile.
    static func apply(_ policy: Policy, to verdicts: [String: TrustedVerdict]) -> [String: TrustedVerdict] {
        var result = verdicts
        for profile in policy.profiles where profile.via != nil && (verdicts[profile.name]?.action ?? .connect) == .connect {
            guard let hold = holding(profile, in: policy, action: { verdicts[$0.name]?.action ?? .connect }) else { continue }
            result[profile.name] = TrustedVerdict(action: .block, heldBy: hold)
        }
        return result
    }
}

extension RuntimeFacts {
    /// Whether an exit's transport must not leave: its own action is not connect, or a
    /// profile along its chain does not connect (checked here too, so that facts made
    /// without HopHold.apply hold the transport as well).
    func hopHeld(_ profile: Profile, in policy: Policy) -> Bool {
        trustedAction(profile) != .connect || HopHold.holding(profile, in: policy, action: trustedAction) != nil
    }
}
