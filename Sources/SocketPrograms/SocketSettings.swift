/// What the socket programs do for the sockets of one cgroup: the value vpnd stores for
/// each cgroup it attaches them to (the programs are the same everywhere; this is their
/// data, in cgroup storage, so a reload that changes a mark or a port changes no program).
public struct SocketSettings: Hashable, Sendable {
    /// Given to every socket made here that has no mark yet (its route and source address
    /// then come from the mark's table from its first lookup); 0 gives none.
    public var mark: UInt32
    /// Our bits of the packet mark (the policy's `mark_mask`).
    public var mask: UInt32
    /// A socket that has none of our bits once the programs below this cgroup ran is
    /// refused (socket() fails with EPERM): set on the profile parent, so that a cgroup
    /// made below it that vpnd has not set up yet (a slice systemd made again) cannot open
    /// an internet socket at all, whether vpnd runs or not.
    public var requireMark: Bool
    /// A packet whose mark under `mask` is none of these (the policy's profiles' marks) is
    /// dropped: a socket made here before vpnd set the cgroup up (born unmarked, it would
    /// leave by the main table), or a member that set the bypass mark, no mark or one no
    /// profile routes (SO_MARK needs CAP_NET_RAW). Any profile's mark passes, not only this
    /// cgroup's: a cgroup attached below another (an app's scope joined to one profile
    /// inside a user's slice of another) gives its sockets its own mark, and the ancestor's
    /// guard runs for them too. Nil: no guard.
    public var guardMarks: [UInt32]?
    /// A TCP connect to port 853 (DNS over TLS) is refused (EPERM) where domain rules would
    /// miss it.
    public var refuseEncryptedDNS: Bool
    /// The refusal applies only to sockets that carry no mark (system mode's root cgroup:
    /// vpnd's own queries and a tunnel daemon's carry one).
    public var unmarkedOnly: Bool
    /// On the root cgroup: an internet socket made, in vpnd's network namespace, in a
    /// cgroup where the profile parent could be that vpnd does not know (beside the parent
    /// or one of its ancestors: the parent removed and made again, whose programs went with
    /// it) is refused, also while vpnd is not running (`PathGuard`).
    public var guardPath: Bool
    /// A packet of a socket made in another network namespace than vpnd's (a container of
    /// the profile, joined to the host by a veth the host forwards for) is dropped and
    /// counted, unless vpnd lets that namespace out (`ForeignNamespaces`): its namespace
    /// routes it by its own rules, the host forwards it without the mark, and it would leave
    /// outside the tunnel. Its loopback stays, but for DNS (port 53), which a resolver of
    /// the host's (docker's embedded one) would answer outside the tunnel.
    public var guardNamespace: Bool
    /// Names follow the app (`NameFollowing`): a connect to resolved's varlink socket goes
    /// to this socket of vpnd's (the profile's), and one to nscd's is refused. Nil: neither.
    /// At most `SocketStorage.resolveSocketSize - 1` bytes.
    public var resolveSocket: String?

    public init(mark: UInt32, mask: UInt32, requireMark: Bool = false, guardMarks: [UInt32]? = nil,
                refuseEncryptedDNS: Bool = false, unmarkedOnly: Bool = false, guardPath: Bool = false, guardNamespace: Bool = false,
                resolveSocket: String? = nil) {
        self.mark = mark
        self.mask = mask
        self.requireMark = requireMark
        self.guardMarks = guardMarks
        self.refuseEncryptedDNS = refuseEncryptedDNS
        self.unmarkedOnly = unmarkedOnly
        self.guardPath = guardPath
        self.guardNamespace = guardNamespace
        self.resolveSocket = resolveSocket
    }

    /// Which programs a cgroup with these settings needs.
    public var programs: [SocketProgram] {
        var programs: [SocketProgram] = mark != 0 || requireMark ? [.socketCreate] : []
        if guardPath { programs.append(.pathGuard) }
        if guardMarks != nil || guardNamespace { programs.append(.egress) }
        if refuseEncryptedDNS { programs += [.connect4, .connect6] }
        if resolveSocket != nil { programs.append(.unixConnect) }
        return programs
    }
}

/// The storage value as the programs read it: 160 bytes.
///
///     0 mark u32 | 4 mask u32 | 8 flags u32 | 12 unused u16 (once the DNS rewrite's port)
///     14 the mask's shift u8 | 15 unused | 16 packets dropped by the guard u64
///     24 sockets refused u64 | 32 encrypted DNS refused u64 | 40 owner u64
///     48 the guard's marks: a bit per mark index (the mark under the mask, shifted down)
///     u64 for 0-63 | 56 u64 for 64-127 | 64 the id of vpnd's cgroup root u64
///     72 packets of another network namespace dropped u64
///     80 the profile's resolve socket, NUL-padded (64 bytes) | 144 connects to resolved's
///     socket sent there u64 | 152 connects to nscd's refused u64
/// (An earlier vpnd's value of 72 or 80 bytes reads with the fields after it 0.)
///
/// The counters are the kernel's (atomic adds): vpnd reads them for status. The owner is
/// the cookie of the network namespace of the vpnd that attached (SO_NETNS_COOKIE): the
/// port-853 refusal acts in that namespace only, and a restarted vpnd takes over the programs its namespace's vpnd
/// left, and no other's. The cgroup root is the one vpnd sees (in a container, the
/// container's, whose depth in the kernel's tree the path guard finds by it).
public struct SocketStorage: Hashable, Sendable {
    public static let size = 160
    public static let resolveSocketSize = 64
    /// What every version's storage holds at least: the fields up to the owner's cookie.
    public static let sizeWithOwner = Offset.owner + 8
    enum Offset {
        static let mark = 0, mask = 4, flags = 8, shift = 14
        static let guardDrops = 16, socketRefusals = 24, encryptedDNSRefusals = 32, owner = 40, guardMarks = 48, root = 64
        static let foreignDrops = 72, resolveSocket = 80, namesRedirected = 144, nscdRefused = 152
    }

    struct Flags: OptionSet {
        let rawValue: UInt32
        static let requireMark = Flags(rawValue: 1)
        static let guardMark = Flags(rawValue: 2)
        // 4 was the DNS rewrite's (older vpnds'): never set, ignored when read.
        static let refuseEncryptedDNS = Flags(rawValue: 8)
        static let unmarkedOnly = Flags(rawValue: 16)
        static let guardPath = Flags(rawValue: 32)
        static let guardNamespace = Flags(rawValue: 64)
        static let followNames = Flags(rawValue: 128)
    }

    public var settings: SocketSettings
    public var owner: UInt64
    /// The id of vpnd's cgroup2 root.
    public var root: UInt64 = 1
    public var guardDrops: UInt64 = 0
    public var socketRefusals: UInt64 = 0
    public var encryptedDNSRefusals: UInt64 = 0
    public var foreignDrops: UInt64 = 0
    public var namesRedirected: UInt64 = 0
    public var nscdRefused: UInt64 = 0

    public init(settings: SocketSettings, owner: UInt64) {
        self.settings = settings
        self.owner = owner
    }

    /// The settings and owner as bytes; the counters start at 0 (the kernel adds to them).
    public var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        var flags: Flags = []
        if settings.requireMark { flags.insert(.requireMark) }
        if settings.guardMarks != nil { flags.insert(.guardMark) }
        if settings.refuseEncryptedDNS { flags.insert(.refuseEncryptedDNS) }
        if settings.unmarkedOnly { flags.insert(.unmarkedOnly) }
        if settings.guardPath { flags.insert(.guardPath) }
        if settings.guardNamespace { flags.insert(.guardNamespace) }
        if let path = settings.resolveSocket {
            flags.insert(.followNames)
            for (index, byte) in path.utf8.prefix(Self.resolveSocketSize - 1).enumerated() { bytes[Offset.resolveSocket + index] = byte }
        }
        Self.put(UInt64(settings.mark), 4, at: Offset.mark, in: &bytes)
        Self.put(UInt64(settings.mask), 4, at: Offset.mask, in: &bytes)
        Self.put(UInt64(flags.rawValue), 4, at: Offset.flags, in: &bytes)
        Self.put(guardDrops, 8, at: Offset.guardDrops, in: &bytes)
        Self.put(socketRefusals, 8, at: Offset.socketRefusals, in: &bytes)
        Self.put(encryptedDNSRefusals, 8, at: Offset.encryptedDNSRefusals, in: &bytes)
        Self.put(foreignDrops, 8, at: Offset.foreignDrops, in: &bytes)
        Self.put(namesRedirected, 8, at: Offset.namesRedirected, in: &bytes)
        Self.put(nscdRefused, 8, at: Offset.nscdRefused, in: &bytes)
        Self.put(owner, 8, at: Offset.owner, in: &bytes)
        Self.put(root, 8, at: Offset.root, in: &bytes)
        let shift = UInt32(settings.mask.trailingZeroBitCount & 31)
        bytes[Offset.shift] = UInt8(shift)
        var words: [UInt64] = [0, 0]
        for mark in settings.guardMarks ?? [] {
            let index = Int((mark & settings.mask) >> shift)
            if index > 0, index < 128 { words[index / 64] |= 1 << UInt64(index % 64) }
        }
        Self.put(words[0], 8, at: Offset.guardMarks, in: &bytes)
        Self.put(words[1], 8, at: Offset.guardMarks + 8, in: &bytes)
        return bytes
    }

    /// A value read back from the kernel; nil if it is not `size` bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.size else { return nil }
        let flags = Flags(rawValue: UInt32(Self.get(bytes, 4, at: Offset.flags)))
        let mask = UInt32(Self.get(bytes, 4, at: Offset.mask)), shift = UInt32(bytes[Offset.shift])
        let words = [Self.get(bytes, 8, at: Offset.guardMarks), Self.get(bytes, 8, at: Offset.guardMarks + 8)]
        let marks = (1..<128).filter { words[$0 / 64] & (1 << UInt64($0 % 64)) != 0 }.map { (UInt32($0) << shift) & mask }
        settings = SocketSettings(mark: UInt32(Self.get(bytes, 4, at: Offset.mark)), mask: mask,
                                  requireMark: flags.contains(.requireMark), guardMarks: flags.contains(.guardMark) ? marks : nil,
                                  refuseEncryptedDNS: flags.contains(.refuseEncryptedDNS),
                                  unmarkedOnly: flags.contains(.unmarkedOnly), guardPath: flags.contains(.guardPath),
                                  guardNamespace: flags.contains(.guardNamespace),
                                  resolveSocket: flags.contains(.followNames) ? Self.path(bytes, at: Offset.resolveSocket) : nil)
        owner = Self.get(bytes, 8, at: Offset.owner)
        root = Self.get(bytes, 8, at: Offset.root)
        guardDrops = Self.get(bytes, 8, at: Offset.guardDrops)
        socketRefusals = Self.get(bytes, 8, at: Offset.socketRefusals)
        encryptedDNSRefusals = Self.get(bytes, 8, at: Offset.encryptedDNSRefusals)
        foreignDrops = Self.get(bytes, 8, at: Offset.foreignDrops)
        namesRedirected = Self.get(bytes, 8, at: Offset.namesRedirected)
        nscdRefused = Self.get(bytes, 8, at: Offset.nscdRefused)
    }

    private static func path(_ bytes: [UInt8], at offset: Int) -> String {
        String(decoding: bytes[offset..<(offset + resolveSocketSize)].prefix { $0 != 0 }, as: UTF8.self)
    }

    private static func put(_ value: UInt64, _ width: Int, at offset: Int, in bytes: inout [UInt8]) {
        for index in 0..<width { bytes[offset + index] = UInt8((value >> (8 * UInt64(index))) & 0xff) }
    }

    private static func get(_ bytes: [UInt8], _ width: Int, at offset: Int) -> UInt64 {
        (0..<width).reduce(0) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
}

/// The cgroups where the profile parent could be, as vpnd last read them: the children of
/// the root and of each of the parent's ancestors, the parent among them. The root's path
/// guard refuses a socket whose cgroup, along that path, is none of them (a cgroup nobody
/// knew yet: a re-made parent, or anything new at those levels while vpnd is not running).
/// A hash map from cgroup id to whether it is on the parent's path.
public struct PathGuard: Hashable, Sendable {
    /// The parent's depth below the root (vpn.slice: 1).
    public var depth: Int
    /// id -> on the parent's path (a component of it) or beside it.
    public var known: [UInt64: Bool]

    public init(depth: Int, known: [UInt64: Bool]) {
        self.depth = depth
        self.known = known
    }

    public static let keySize: UInt32 = 8
    public static let valueSize: UInt32 = 4
    public static let entries: UInt32 = 16384
}
