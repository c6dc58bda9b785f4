/// A desired nftables table as a plain value: what the policy compiler produces, what
/// `vpnctl plan` prints and what the netlink edge encodes into one atomic batch.
public struct NftTable: Hashable, Sendable {
    public var family: NftFamily
    public var name: String
    public var counters: [NftCounter]
    public var sets: [NftSet]
    public var chains: [NftChain]

    public init(family: NftFamily, name: String, counters: [NftCounter] = [], sets: [NftSet] = [], chains: [NftChain] = []) {
        self.family = family
        self.name = name
        self.counters = counters
        self.sets = sets
        self.chains = chains
    }

    public func set(named name: String) -> NftSet? { sets.first { $0.name == name } }
    public func chain(named name: String) -> NftChain? { chains.first { $0.name == name } }
}

public enum NftFamily: String, Hashable, Sendable {
    case inet, ip, ip6, bridge

    /// NFPROTO_* value used on the wire.
    public var protocolFamily: UInt16 {
        switch self {
        case .inet: return 1
        case .ip: return 2
        case .ip6: return 10
        case .bridge: return 7
        }
    }
}

/// A named counter object: survives rule changes and can be read without listing rules.
public struct NftCounter: Hashable, Sendable {
    public var name: String
    public var packets: UInt64
    public var bytes: UInt64
    public var comment: String?

    public init(name: String, packets: UInt64 = 0, bytes: UInt64 = 0, comment: String? = nil) {
        self.name = name
        self.packets = packets
        self.bytes = bytes
        self.comment = comment
    }
}

public struct NftChain: Hashable, Sendable {
    public var name: String
    public var base: NftBaseChain?
    public var rules: [NftRule]

    public init(name: String, base: NftBaseChain? = nil, rules: [NftRule] = []) {
        self.name = name
        self.base = base
        self.rules = rules
    }
}

public struct NftBaseChain: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable { case filter, route, nat }
    public enum Hook: String, Hashable, Sendable {
        case prerouting, input, forward, output, postrouting

        /// NF_INET_* hook number.
        public var number: UInt32 {
            switch self {
            case .prerouting: return 0
            case .input: return 1
            case .forward: return 2
            case .output: return 3
            case .postrouting: return 4
            }
        }
    }

    public var kind: Kind
    public var hook: Hook
    public var priority: Int32
    public var policy: NftVerdict

    public init(kind: Kind, hook: Hook, priority: Int32, policy: NftVerdict = .accept) {
        self.kind = kind
        self.hook = hook
        self.priority = priority
        self.policy = policy
    }

    /// The standard priority names nft uses, so rendered text reads like hand-written rules.
    public static let mangle: Int32 = -150
    public static let filter: Int32 = 0
    public static let dstnat: Int32 = -100
    public static let srcnat: Int32 = 100
}

public struct NftRule: Hashable, Sendable {
    public var statements: [NftStatement]
    public var comment: String?

    public init(_ statements: [NftStatement], comment: String? = nil) {
        self.statements = statements
        self.comment = comment
    }
}

public enum NftVerdict: Hashable, Sendable {
    case accept, drop, `return`
    case jump(String)
    case goto(String)
}
