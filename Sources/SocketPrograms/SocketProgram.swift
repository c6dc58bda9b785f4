import BPF

/// The programs vpnd attaches to a cgroup, one per hook. Together they are what a member
/// is at its sockets:
/// - `socketCreate` (every internet socket, at creation): the birth mark, before the
///   socket's first route lookup, so route and source address come from the profile's
///   table; and, on the profile parent, the refusal of a socket that got no mark of ours.
/// - `egress` (every packet a socket of the cgroup sends): the guard that drops a packet
///   whose mark is not the cgroup's.
/// - connect, for IPv4 and IPv6: port 853 refused where domain rules apply. A member's
///   DNS, UDP and TCP, reaches its proxy by routing (DNSRouting in Plan), not by rewriting
///   its destination.
/// They cost nothing to a process outside the cgroup, a tunnel's own packets included.
public enum SocketProgram: String, CaseIterable, Hashable, Sendable {
    case socketCreate = "create"
    case pathGuard = "pathguard"
    case egress
    case connect4, connect6, sendmsg4, sendmsg6, recvmsg4, recvmsg6, getpeername4, getpeername6
    /// connect() of a Unix socket (Linux 6.7): a member's lookups through resolved's
    /// varlink socket sent to its profile's, and nscd's socket refused (`NameFollowing`).
    case unixConnect = "unixconnect"

    /// What vpnd loads and attaches. The other kinds are what older vpnds attached (the
    /// DNS rewrite at sendmsg and connect, its restore at recvmsg and getpeername): they
    /// remain known so that a restarted vpnd recognises and detaches them.
    public static let inUse: [SocketProgram] = [.socketCreate, .pathGuard, .egress, .connect4, .connect6, .unixConnect]

    /// `enum bpf_prog_type`.
    public var programType: UInt32 {
        switch self {
        case .socketCreate, .pathGuard: 9 // BPF_PROG_TYPE_CGROUP_SOCK
        case .egress: 8 // BPF_PROG_TYPE_CGROUP_SKB
        default: 18 // BPF_PROG_TYPE_CGROUP_SOCK_ADDR
        }
    }

    /// `enum bpf_attach_type`.
    public var attachType: UInt32 {
        switch self {
        case .socketCreate, .pathGuard: 2 // BPF_CGROUP_INET_SOCK_CREATE
        case .egress: 1 // BPF_CGROUP_INET_EGRESS
        case .connect4: 10 // BPF_CGROUP_INET4_CONNECT
        case .connect6: 11
        case .sendmsg4: 14 // BPF_CGROUP_UDP4_SENDMSG
        case .sendmsg6: 15
        case .recvmsg4: 19 // BPF_CGROUP_UDP4_RECVMSG
        case .recvmsg6: 20
        case .getpeername4: 29 // BPF_CGROUP_INET4_GETPEERNAME
        case .getpeername6: 30
        case .unixConnect: 49 // BPF_CGROUP_UNIX_CONNECT
        }
    }

    /// The kernel's name for the loaded program (at most 15 characters): what a restarted
    /// vpnd recognises its predecessor's programs by, with their storage's owner.
    public var name: String { "vx_\(rawValue)" }

    static let namePrefix = "vx_"

    public static func named(_ name: String) -> SocketProgram? {
        guard name.hasPrefix(namePrefix) else { return nil }
        return SocketProgram(rawValue: String(name.dropFirst(namePrefix.count)))
    }

    /// The program's instructions (for a kind in `inUse`), for the maps it uses: the cgroup
    /// storage with each cgroup's `SocketStorage`, the cgroups along the parent's path
    /// (`PathGuard`, `depth` levels of it), the network namespaces vpnd lets out and those
    /// seen (`ForeignNamespaces`); the kernel's types the unix-connect program needs.
    public func code(storage: Int32, known: Int32 = -1, namespaces: ForeignNamespaces.Maps = .none, depth: Int = 1,
                     names: NameFollowingTypes? = nil) throws(ProgramError) -> [BPFInstruction] {
        var code = BPFAssembler()
        // r6 = the context, r7 = this cgroup's storage (never null for cgroup storage).
        code.move(.r6, .r1)
        code.loadMap(.r1, descriptor: storage)
        code.move(.r2, 0)
        code.call(.getLocalStorage)
        code.move(.r7, .r0)
        switch self {
        case .socketCreate: Self.socketCreate(&code, seen: namespaces.seen)
        case .pathGuard: Self.pathGuard(&code, known: known, depth: depth)
        case .egress: Self.egress(&code, namespaces: namespaces)
        case .unixConnect:
            guard let names else { throw .typesNotGiven(program: "unix-connect") }
            NameFollowing.unixConnect(&code, types: names)
        default: Self.refuseEncryptedDNS(&code)
        }
        return try code.assemble()
    }

    typealias Offset = SocketStorage.Offset
    typealias Flags = SocketStorage.Flags

    /// Context offsets (uapi: struct bpf_sock, __sk_buff, bpf_sock_addr).
    enum Context {
        static let socketMark = 16, packetMark = 8
        static let userPort = 24, addressSocket = 64, outputInterface = 40
    }

    /// A new socket without a mark gets the cgroup's; on the parent, one that still has
    /// none of our bits is refused. One made in another network namespace names its
    /// process in the namespaces seen (status says which process a held container's is).
    private static func socketCreate(_ code: inout BPFAssembler, seen: Int32) {
        code.load(.word, .r1, from: .r6, Context.socketMark)
        code.jump(if: .r1, .notEqual, 0, to: "marked")
        code.load(.word, .r1, from: .r7, Offset.mark)
        code.store(.word, .r1, to: .r6, Context.socketMark)
        code.label("marked")
        if seen >= 0 {
            code.load(.word, .r1, from: .r7, Offset.flags)
            code.and(.r1, Int32(Flags.guardNamespace.rawValue))
            code.jump(if: .r1, .equal, 0, to: "named")
            code.move(.r1, .r6)
            code.call(.getNetnsCookie)
            code.load(.doubleword, .r1, from: .r7, Offset.owner)
            code.jump(if: .r0, .equal, .r1, to: "named")
            code.store(.doubleword, .r0, to: .r10, -8)
            code.call(.getCurrentPidTgid)
            code.shiftRight(.r0, 32)
            code.move(.r8, .r0)
            code.call(.getCurrentCgroupID)
            code.move(.r9, .r0)
            code.lookUp(map: seen, keyAt: -8)
            code.jumpIfZero(.r0, to: "first")
            code.store(.doubleword, .r8, to: .r0, ForeignNamespaces.Value.process)
            code.store(.doubleword, .r9, to: .r0, ForeignNamespaces.Value.cgroup)
            code.jump(to: "named")
            code.label("first")
            code.store(.doubleword, 0, to: .r10, -32 + ForeignNamespaces.Value.packets)
            code.store(.doubleword, .r8, to: .r10, -32 + ForeignNamespaces.Value.process)
            code.store(.doubleword, .r9, to: .r10, -32 + ForeignNamespaces.Value.cgroup)
            update(&code, seen, keyAt: -8, valueAt: -32)
            code.label("named")
        }
        code.load(.word, .r2, from: .r7, Offset.flags)
        code.and(.r2, Int32(Flags.requireMark.rawValue))
        code.jump(if: .r2, .equal, 0, to: "allow")
        code.load(.word, .r1, from: .r6, Context.socketMark)
        code.load(.word, .r2, from: .r7, Offset.mask)
        code.and(.r1, .r2)
        code.jump(if: .r1, .notEqual, 0, to: "allow")
        count(&code, Offset.socketRefusals)
        code.exit(returning: 0)
        code.label("allow")
        code.exit(returning: 1)
    }

    /// The kernel's tree is deeper than vpnd's where vpnd runs in a cgroup namespace (a
    /// container): ancestor levels count from the real root. The root vpnd sees is found
    /// among the first this many.
    static let rootSearch = 16

    /// On the root: a socket of vpnd's network namespace whose cgroup, at a level where the
    /// parent's path runs, is no cgroup vpnd knows there, is refused and counted.
    private static func pathGuard(_ code: inout BPFAssembler, known: Int32, depth: Int) {
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.guardPath.rawValue))
        code.jump(if: .r1, .equal, 0, to: "allow")
        code.move(.r1, .r6)
        code.call(.getNetnsCookie)
        code.load(.doubleword, .r1, from: .r7, Offset.owner)
        code.jump(if: .r0, .notEqual, .r1, to: "allow")
        // r9 = the level of vpnd's root in the kernel's tree (0 outside a container).
        code.load(.doubleword, .r8, from: .r7, Offset.root)
        for level in 0..<rootSearch {
            code.move(.r9, Int32(level))
            code.move(.r1, Int32(level))
            code.call(.getCurrentAncestorCgroupID)
            code.jump(if: .r0, .equal, .r8, to: "rooted")
        }
        code.jump(to: "allow")
        code.label("rooted")
        for level in 1...max(depth, 1) {
            code.move(.r1, .r9)
            code.add(.r1, Int32(level))
            code.call(.getCurrentAncestorCgroupID)
            // Shallower than this level: nothing of the path.
            code.jumpIfZero(.r0, to: "allow")
            code.store(.doubleword, .r0, to: .r10, -8)
            code.lookUp(map: known, keyAt: -8)
            code.jumpIfZero(.r0, to: "refuse")
            if level < depth {
                // Known beside the path: not where the parent could be.
                code.load(.word, .r1, from: .r0, 0)
                code.jump(if: .r1, .equal, 0, to: "allow")
            }
        }
        code.label("allow")
        code.exit(returning: 1)
        code.label("refuse")
        count(&code, Offset.socketRefusals)
        code.exit(returning: 0)
    }

    /// A packet whose mark under the mask is none of the guard's (a bit per mark index) is
    /// dropped and counted.
    private static func egress(_ code: inout BPFAssembler, namespaces: ForeignNamespaces.Maps) {
        if namespaces.seen >= 0 { foreignNamespace(&code, namespaces) }
        code.label("marks")
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.guardMark.rawValue))
        code.jump(if: .r1, .equal, 0, to: "allow")
        // r2 = the mark's index: (mark & mask) >> shift, below 128 (the mask has 7 bits at most).
        code.load(.word, .r2, from: .r6, Context.packetMark)
        code.load(.word, .r3, from: .r7, Offset.mask)
        code.and(.r2, .r3)
        code.load(.byte, .r3, from: .r7, Offset.shift)
        code.shiftRight(.r2, .r3)
        code.and(.r2, 127)
        // r4 = the word holding its bit.
        code.load(.doubleword, .r4, from: .r7, Offset.guardMarks)
        code.jump(if: .r2, .less, 64, to: "word")
        code.load(.doubleword, .r4, from: .r7, Offset.guardMarks + 8)
        code.add(.r2, -64)
        code.label("word")
        code.move(.r3, 1)
        code.shiftLeft(.r3, .r2)
        code.and(.r3, .r4)
        code.jumpIfNotZero(.r3, to: "allow")
        count(&code, Offset.guardDrops)
        code.exit(returning: 0)
        code.label("allow")
        code.exit(returning: 1)
    }

    /// connect: port 853 (DNS over TLS) refused where the flags say so, before any packet
    /// exists, so that the client falls back to port 53 at once.
    private static func refuseEncryptedDNS(_ code: inout BPFAssembler) {
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.refuseEncryptedDNS.rawValue))
        code.jump(if: .r1, .equal, 0, to: "allow")
        ours(&code, otherwise: "allow")
        code.load(.word, .r1, from: .r6, Context.userPort)
        code.jump(if: .r1, .notEqual, networkPort(853), to: "allow")
        count(&code, Offset.encryptedDNSRefusals)
        code.exit(returning: 0)
        code.label("allow")
        code.exit(returning: 1)
    }

    /// Goes on only for a socket of vpnd's network namespace (a member's container has
    /// its own resolver, which domain rules do not see either) and, with `unmarkedOnly`,
    /// without a mark.
    private static func ours(_ code: inout BPFAssembler, otherwise target: String) {
        code.move(.r1, .r6)
        code.call(.getNetnsCookie)
        code.load(.doubleword, .r1, from: .r7, Offset.owner)
        code.jump(if: .r0, .notEqual, .r1, to: target)
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.unmarkedOnly.rawValue))
        code.jump(if: .r1, .equal, 0, to: "checked")
        code.load(.doubleword, .r2, from: .r6, Context.addressSocket)
        code.load(.word, .r2, from: .r2, Context.socketMark)
        code.jump(if: .r2, .notEqual, 0, to: target)
        code.label("checked")
    }

    /// A packet of a socket of another network namespace than vpnd's: out only if vpnd lets
    /// that namespace out, or on its loopback but for port 53; else counted (in the cgroup's
    /// storage, and by namespace in the namespaces seen) and dropped. Let out, it is allowed
    /// whatever its mark: the host marks what arrives from that namespace itself (the veth
    /// cleared the socket's), and the namespace's own kernel sockets (neighbour discovery,
    /// ICMP errors, TCP resets), made in the cgroup of whoever made the namespace (a
    /// runtime started in the profile) and never marked, must pass. vpnd's own namespace's
    /// packets go on to "marks".
    private static func foreignNamespace(_ code: inout BPFAssembler, _ maps: ForeignNamespaces.Maps) {
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.guardNamespace.rawValue))
        code.jump(if: .r1, .equal, 0, to: "marks")
        code.move(.r1, .r6)
        code.call(.getNetnsCookie)
        code.load(.doubleword, .r1, from: .r7, Offset.owner)
        code.jump(if: .r0, .equal, .r1, to: "marks")
        code.store(.doubleword, .r0, to: .r10, -8)
        code.load(.word, .r1, from: .r6, Context.outputInterface)
        code.jump(if: .r1, .notEqual, 1, to: "outside")
        // Its own loopback (index 1 in every namespace): DNS is the only thing there that
        // a host's process (docker's embedded resolver) would take outside the tunnel.
        loadBytes(&code, offset: 0, count: 1, to: -16)
        code.load(.byte, .r8, from: .r10, -16)
        code.move(.r9, .r8)
        code.shiftRight(.r9, 4)
        code.jump(if: .r9, .equal, 6, to: "loopback6")
        code.jump(if: .r9, .notEqual, 4, to: "allow")
        loadBytes(&code, offset: 9, count: 1, to: -16)
        code.and(.r8, 0x0f)
        code.move(.r1, 2)
        code.shiftLeft(.r8, .r1)
        code.add(.r8, 2)
        code.jump(to: "transport")
        code.label("loopback6")
        loadBytes(&code, offset: 6, count: 1, to: -16)
        code.move(.r8, 42)
        code.label("transport")
        code.load(.byte, .r1, from: .r10, -16)
        code.jump(if: .r1, .equal, 6, to: "port")
        code.jump(if: .r1, .notEqual, 17, to: "allow")
        code.label("port")
        code.move(.r1, .r6)
        code.move(.r2, .r8)
        code.move(.r3, .r10)
        code.add(.r3, -16)
        code.move(.r4, 2)
        code.call(.skbLoadBytes)
        code.jump(if: .r0, .notEqual, 0, to: "allow")
        code.load(.halfword, .r1, from: .r10, -16)
        code.jump(if: .r1, .equal, networkPort(53), to: "foreign")
        code.jump(to: "allow")
        code.label("outside")
        code.lookUp(map: maps.allowed, keyAt: -8)
        code.jumpIfNotZero(.r0, to: "allow")
        code.label("foreign")
        count(&code, Offset.foreignDrops)
        code.lookUp(map: maps.seen, keyAt: -8)
        code.jumpIfZero(.r0, to: "first")
        code.move(.r1, 1)
        code.atomicAdd(.r1, to: .r0, ForeignNamespaces.Value.packets)
        code.exit(returning: 0)
        code.label("first")
        code.move(.r1, .r6)
        code.call(.skbCgroupID)
        code.store(.doubleword, .r0, to: .r10, -32 + ForeignNamespaces.Value.cgroup)
        code.store(.doubleword, 1, to: .r10, -32 + ForeignNamespaces.Value.packets)
        code.store(.doubleword, 0, to: .r10, -32 + ForeignNamespaces.Value.process)
        update(&code, maps.seen, keyAt: -8, valueAt: -32)
        code.exit(returning: 0)
    }

    /// `count` bytes of the packet from its network header at `offset` to fp + `to`; a
    /// packet too short goes on to "marks".
    private static func loadBytes(_ code: inout BPFAssembler, offset: Int32, count: Int32, to: Int32) {
        code.move(.r1, .r6)
        code.move(.r2, offset)
        code.move(.r3, .r10)
        code.add(.r3, to)
        code.move(.r4, count)
        code.call(.skbLoadBytes)
        code.jump(if: .r0, .notEqual, 0, to: "marks")
    }

    /// map[fp + key] = fp + value (any flags).
    private static func update(_ code: inout BPFAssembler, _ map: Int32, keyAt key: Int32, valueAt value: Int32) {
        code.loadMap(.r1, descriptor: map)
        code.move(.r2, .r10)
        code.add(.r2, key)
        code.move(.r3, .r10)
        code.add(.r3, value)
        code.move(.r4, 0)
        code.call(.mapUpdateElement)
    }

    /// *(u64 *)(storage + offset) += 1
    static func count(_ code: inout BPFAssembler, _ offset: Int) {
        code.move(.r1, 1)
        code.atomicAdd(.r1, to: .r7, offset)
    }

    /// A port as the context holds it: network order in the low 16 bits of a u32, read on
    /// a little-endian machine.
    static func networkPort(_ port: UInt16) -> UInt32 { UInt32(port.bigEndian) }
}
