import Addresses

/// A profile's trusted networks (`vpnctl status`): the action in force, the rule that
/// chose it and why, since when, and what the host's networks looked like then.
public struct TrustedStatus: Codable, Hashable, Sendable {
    /// "connect", "disconnect" or "block".
    public var action: String
    /// 1-based number of the rule that matched; nil: none did (connect).
    public var rule: Int?
    /// Where that rule is written, "file:line:column".
    public var ruleLocation: String?
    /// The fields that matched and the host's values ("gateway_mac" -> "02:00:5e:00:53:01 (gateway 192.0.2.1)").
    public var matched: [String: String]
    /// Seconds since the epoch when this action took effect (or vpnd started).
    public var since: Double
    /// How many rules the profile has.
    public var rules: Int
    /// What the rules were compared with.
    public var network: NetworkFacts
    /// A multihop exit held by its chain: the profile carrying its transport (tunnel.via, or
    /// one further along) that does not connect, and that profile's action.
    public var heldBy: String?
    public var heldByAction: String?

    public init(action: String, rule: Int? = nil, ruleLocation: String? = nil, matched: [String: String] = [:], since: Double,
                rules: Int, network: NetworkFacts = NetworkFacts(), heldBy: String? = nil, heldByAction: String? = nil) {
        self.heldBy = heldBy
        self.heldByAction = heldByAction
        self.action = action
        self.rule = rule
        self.ruleLocation = ruleLocation
        self.matched = matched
        self.since = since
        self.rules = rules
        self.network = network
    }
}
