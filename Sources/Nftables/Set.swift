import Addresses

/// A named set or map. Keys carry both the kernel value and, for cgroups, the path that
/// the text form needs (nft's grammar names a cgroup by path, the kernel by its id).
public struct NftSet: Hashable, Sendable {
    public var name: String
    public var key: NftSetKeyType
    public var data: NftSetDataType?
    public var elements: [NftElement]
    public var comment: String?
    /// Elements are address prefixes (`flags interval`); they must not overlap (see
    /// `IPPrefix.covering`).
    public var interval: Bool
    /// Elements carry timeouts and are added at run time (`flags timeout`): what the DNS
    /// proxy learns. The kernel holds them; a table replace carries them over.
    public var timeout: Bool

    public init(name: String, key: NftSetKeyType, data: NftSetDataType? = nil, elements: [NftElement] = [], comment: String? = nil,
                interval: Bool = false, timeout: Bool = false) {
        self.name = name
        self.key = key
        self.data = data
        self.elements = elements
        self.comment = comment
        self.interval = interval
        self.timeout = timeout
    }

    public var isMap: Bool { data != nil }
}

public enum NftSetKeyType: String, Hashable, Sendable {
    case cgroupv2 = "cgroupsv2"
    case mark = "mark"
    case ipv4Address = "ipv4_addr"
    case ipv6Address = "ipv6_addr"
    /// A TCP or UDP port (`udp sport @set`).
    case port = "inet_service"
    /// A socket's owner (`meta skuid @set`).
    case uid = "uid"
    /// An interface name (`iifname vmap @map`): what the name is, not which device has it
    /// now, so an element holds for an interface deleted and made again.
    case interfaceName = "ifname"

    /// nft's datatype number (TYPE_* in nftables' datatype.h), stored in the set so that
    /// `nft list` prints keys in their own notation.
    public var datatype: UInt32 {
        switch self {
        case .cgroupv2: return 46
        case .mark: return 19
        case .ipv4Address: return 7
        case .ipv6Address: return 8
        case .port: return 13
        case .uid: return 24
        case .interfaceName: return 41
        }
    }

    public var length: UInt32 {
        switch self {
        case .cgroupv2: return 8
        case .mark: return 4
        case .ipv4Address: return 4
        case .ipv6Address: return 16
        case .port: return 2
        case .uid: return 4
        case .interfaceName: return 16  // IFNAMSIZ
        }
    }

    /// Addresses and ports are compared in network order; marks, uids and cgroup ids in the
    /// host's. Interface names are strings, which nft marks as host order (their bytes are
    /// in sequence either way).
    public var isBigEndian: Bool { self == .ipv4Address || self == .ipv6Address || self == .port }

    public static func address(ipv4: Bool) -> NftSetKeyType { ipv4 ? .ipv4Address : .ipv6Address }
}

public enum NftSetDataType: String, Hashable, Sendable {
    case verdict
}

public struct NftElement: Hashable, Sendable {
    public var key: NftElementKey
    public var verdict: NftVerdict?
    /// Seconds until the kernel removes the element (sets with `timeout`).
    public var timeout: UInt32?

    public init(key: NftElementKey, verdict: NftVerdict? = nil, timeout: UInt32? = nil) {
        self.key = key
        self.verdict = verdict
        self.timeout = timeout
    }
}

public enum NftElementKey: Hashable, Sendable {
    /// A cgroup v2 directory: `id` is its inode number (what the kernel matches),
    /// `path` is relative to the cgroup2 mount (what nft's text grammar accepts).
    case cgroup(id: UInt64, path: String)
    case mark(UInt32)
    /// An address prefix, in an interval set (a host prefix is one address).
    case prefix(IPPrefix)
    /// A TCP or UDP port.
    case port(UInt16)
    /// A user id.
    case uid(UInt32)
    /// An interface name (at most 15 bytes of UTF-8: the kernel's IFNAMSIZ less the
    /// terminating zero).
    case interface(String)
}
