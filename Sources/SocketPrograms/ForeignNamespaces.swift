/// The network namespaces that members' sockets are made in when they are not vpnd's (a
/// container of the profile: nspawn `--slice`, podman or docker `--cgroup-parent`, a unit
/// with `NetworkNamespacePath=`). Their packets are dropped at the cgroup's egress unless
/// vpnd lets their namespace out (`allowed`, by its cookie); each one seen is kept in
/// `seen` with what it had dropped and the last process that made a socket there, which
/// status names. Both maps belong to the socket programs and outlive vpnd with them.
public enum ForeignNamespaces {
    /// The maps, as descriptors for the programs' code; -1: none (no namespace guard).
    public struct Maps: Sendable {
        public var allowed: Int32
        public var seen: Int32

        public init(allowed: Int32, seen: Int32) {
            self.allowed = allowed
            self.seen = seen
        }

        public static let none = Maps(allowed: -1, seen: -1)
    }

    /// Key: the namespace's cookie (u64). `allowed`'s value a `Place` (the programs only
    /// look the key up); `seen`'s `Value`.
    public static let keySize: UInt32 = 8, allowedValueSize: UInt32 = 8, seenValueSize: UInt32 = 24
    /// A hash map (allowed) and an LRU hash (seen: the oldest go first).
    public static let allowedType: UInt32 = 1, seenType: UInt32 = 9
    public static let entries: UInt32 = 1024

    /// `seen`'s value: packets dropped u64 | the last process (tgid) that made a socket u64 |
    /// the cgroup (id) of that process, or of the first packet dropped u64. An earlier vpnd's
    /// value has no cgroup (16 bytes).
    enum Value {
        static let packets = 0, process = 8, cgroup = 16
    }

    /// What a namespace let out is, kept with it in `allowed`: its id in vpnd's network
    /// namespace (i32) and its profile's index (u32). The programs never read it; a
    /// restarted vpnd routes the namespace by it when the process that vpnd knew it by is
    /// gone (its last socket's maker, a DNS lookup's), as it cannot ask the namespace.
    public struct Place: Hashable, Sendable {
        public var namespace: Int32
        public var profileIndex: UInt32

        public init(namespace: Int32, profileIndex: UInt32) {
            self.namespace = namespace
            self.profileIndex = profileIndex
        }

        public var bytes: [UInt8] {
            withUnsafeBytes(of: namespace.littleEndian, Array.init) + withUnsafeBytes(of: profileIndex.littleEndian, Array.init)
        }

        /// From the map's value bytes (an earlier vpnd's 4-byte value says nothing: nil).
        public init?(bytes: [UInt8]) {
            guard bytes.count == Int(ForeignNamespaces.allowedValueSize) else { return nil }
            let word = { (offset: Int) in (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) } }
            self.init(namespace: Int32(bitPattern: word(0)), profileIndex: word(4))
        }
    }

    /// One namespace as `seen` holds it.
    public struct Seen: Hashable, Sendable {
        public var cookie: UInt64
        public var packets: UInt64
        /// The last process that made a socket there (0: none seen since vpnd attached).
        public var process: Int32
        /// That process's cgroup, by id (0: not known): where vpnd looks for the namespace
        /// once the process is gone (a container whose sockets are all brief).
        public var cgroup: UInt64

        public init(cookie: UInt64, packets: UInt64, process: Int32, cgroup: UInt64 = 0) {
            self.cookie = cookie
            self.packets = packets
            self.process = process
            self.cgroup = cgroup
        }

        /// From the map's value bytes (an earlier vpnd's 16, without the cgroup).
        public init?(cookie: UInt64, value: [UInt8]) {
            guard value.count == Int(ForeignNamespaces.seenValueSize) || value.count == 16 else { return nil }
            let word = { (offset: Int) in (0..<8).reduce(UInt64(0)) { $0 | UInt64(value[offset + $1]) << (8 * UInt64($1)) } }
            self.init(cookie: cookie, packets: word(Value.packets), process: Int32(truncatingIfNeeded: word(Value.process)),
                      cgroup: value.count > Value.cgroup ? word(Value.cgroup) : 0)
        }
    }
}
