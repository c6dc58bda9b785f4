import BPF
import CLinux
import Descriptors
import Glibc
import SocketPrograms

/// The socket programs loaded (Sources/SocketPrograms), with their maps: what vpnd
/// attaches to cgroups. Loading needs CAP_BPF (and CAP_NET_ADMIN); attaching, detaching and
/// writing a cgroup's settings need only these descriptors and CAP_NET_ADMIN, so vpnd
/// loads once at start, before it drops CAP_BPF.
///
/// Attachments are the kernel's (multi-attach, not BPF links): they hold while vpnd is
/// stopped, crashed or restarting, so a member's socket is born marked, guarded and sent
/// to its proxy whether vpnd runs or not, as the nft killswitch holds. A restarted vpnd
/// takes over what its predecessor attached (`AdoptedSocketPrograms`).
public final class SocketProgramSet {
    /// The settings and counters every program of a cgroup shares: a cgroup storage map
    /// (BPF_MAP_TYPE_CGROUP_STORAGE) keyed by the cgroup's id, by this name.
    static let storageMapType: UInt32 = 19
    static let storageMapName = "vx_settings"


    /// Assembles and loads a program of `type`, expected at `attachType`, named `name` in
    /// the kernel; a refusal says what (`what`) and the verifier's last words.
    static func load(_ name: String, type: UInt32, attachType: UInt32, what: String,
                     _ assemble: () throws(ProgramError) -> [BPFInstruction]) throws(SocketProgramError) -> FileDescriptor {
        let code: [BPFInstruction]
        do { code = try assemble() } catch {
            throw .assembling(program: name, error)
        }
        let bytes = code.flatMap(\.bytes)
        // Without a log first: the verifier's log of a long program overflows the buffer
        // (ENOSPC) even when the program passes; asked again with it only to say why not.
        var log = [CChar](repeating: 0, count: 16384)
        var loaded = bytes.withUnsafeBytes { vx_bpf_prog_load(type, attachType, $0.baseAddress, UInt32(code.count), name, nil, 0) }
        if loaded < 0 {
            loaded = bytes.withUnsafeBytes {
                vx_bpf_prog_load(type, attachType, $0.baseAddress, UInt32(code.count), name, &log, UInt32(log.count))
            }
        }
        guard loaded >= 0 else {
            throw .loadRefused(SystemError("bpf: loading \(what) \(name)"), verifier: text(log).split(separator: "\n").suffix(2).joined(separator: "; "))
        }
        return FileDescriptor(adopting: loaded)
    }

    private let storage: FileDescriptor
    private let known: FileDescriptor
    /// Members' network namespaces other than vpnd's: let out, and seen (ForeignNamespaces).
    private let allowedNamespaces: FileDescriptor
    private let seenNamespaces: FileDescriptor
    /// What the path guard's map holds now (id -> on the parent's path).
    private var knownNow: [UInt64: Bool] = [:]
    /// The namespaces the let-out map holds now.
    private var letOutNow: [UInt64: ForeignNamespaces.Place] = [:]
    /// An earlier vpnd's let-out maps, which its programs read until the first apply
    /// detaches them, and what they let out: held again as ours are (`takeOver`).
    private var earlierLetOut: [(map: DescriptorNumber, cookies: Set<UInt64>)] = []
    /// The loaded programs, owned by `owned`.
    private var owned = DescriptorTable()
    private var programs: [SocketProgram: DescriptorNumber] = [:]
    /// Their ids in the kernel: what BPF_PROG_QUERY lists where they are attached.
    private var ids: [SocketProgram: UInt32] = [:]
    /// Who attaches: this network namespace's cookie, as written into each cgroup's storage.
    public let owner: UInt64
    /// The id of the cgroup2 root vpnd sees (a container's in a cgroup namespace).
    public let root: UInt64

    /// The storage's value size: ours, or in tests a later version's longer one, which a
    /// vpnd adopting its programs must read without writing past its buffer.
    let storageSize: Int

    /// `parentDepth`: the profile parent's depth below the root, which the path guard's code
    /// walks (vpnd's parent does not change while it runs).
    public convenience init(owner: UInt64, root: UInt64, parentDepth: Int = 1) throws(SocketProgramError) {
        try self.init(owner: owner, root: root, parentDepth: parentDepth, storageSize: SocketStorage.size)
    }

    init(owner: UInt64, root: UInt64, parentDepth: Int, storageSize: Int) throws(SocketProgramError) {
        self.owner = owner
        self.root = root
        self.storageSize = storageSize
        do {
            // Key: the cgroup id alone, so one value is shared by every program of ours
            // attached to that cgroup.
            storage = try FileDescriptor("bpf: creating the cgroup storage of the socket programs",
                                         returned: vx_bpf_map_create(Self.storageMapType, 8, UInt32(storageSize), 0, Self.storageMapName))
            known = try FileDescriptor("bpf: creating the map of cgroups along the profile parent",
                                       returned: vx_bpf_map_create(1, PathGuard.keySize, PathGuard.valueSize, PathGuard.entries, "vx_known"))
            allowedNamespaces = try FileDescriptor("bpf: creating the map of network namespaces let out",
                                                   returned: vx_bpf_map_create(ForeignNamespaces.allowedType, ForeignNamespaces.keySize,
                                                                               ForeignNamespaces.allowedValueSize, ForeignNamespaces.entries, "vx_netns_out"))
            seenNamespaces = try FileDescriptor("bpf: creating the map of members' network namespaces",
                                                returned: vx_bpf_map_create(ForeignNamespaces.seenType, ForeignNamespaces.keySize,
                                                                            ForeignNamespaces.seenValueSize, ForeignNamespaces.entries, "vx_netns_seen"))
        } catch { throw .system(error) }
        let namespaces = ForeignNamespaces.Maps(allowed: allowedNamespaces.raw, seen: seenNamespaces.raw)
        for program in SocketProgram.inUse where program != .unixConnect {
            let loaded = try Self.load(program.name, type: program.programType, attachType: program.attachType, what: "the socket program") {
                () throws(ProgramError) in try program.code(storage: storage.raw, known: known.raw, namespaces: namespaces, depth: parentDepth)
            }
            ids[program] = vx_bpf_prog_id(loaded.raw)
            programs[program] = owned.insert(loaded)
        }
        // Names follow the app where the kernel has the Unix-socket hooks (6.7); without
        // them everything else still holds, and status says what is not covered.
        do throws(SocketProgramError) {
            let types: NameFollowingTypes
            do { types = try NameFollowingTypes(btf: Self.kernelBTF()) } catch {
                throw .kernelTypes(error)
            }
            let program = SocketProgram.unixConnect
            let loaded = try Self.load(program.name, type: program.programType, attachType: program.attachType, what: "the socket program") {
                () throws(ProgramError) in try program.code(storage: storage.raw, names: types)
            }
            ids[program] = vx_bpf_prog_id(loaded.raw)
            programs[program] = owned.insert(loaded)
        } catch {
            namesFailure = error
        }
    }

    /// Why members' lookups through resolved's varlink socket and nscd are not followed on
    /// this kernel (nil: they are).
    public private(set) var namesFailure: SocketProgramError?

    /// Whether a cgroup can be given `SocketSettings.resolveSocket`.
    public var followsNames: Bool { programs[.unixConnect] != nil }

    static func kernelBTF() -> [UInt8] {
        guard let file = try? FileDescriptor.open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC) else { return [] }
        return file.readToEnd()
    }

    /// Which of these programs the kernel has attached to the cgroup itself now (not what
    /// vpnd did, which someone with CAP_NET_ADMIN may have undone since). Needs
    /// CAP_NET_ADMIN, which vpnd keeps.
    public func attached(on cgroup: borrowing FileDescriptor, path: String) throws(SocketProgramError) -> Set<SocketProgram> {
        var found: Set<SocketProgram> = []
        for program in SocketProgram.inUse {
            guard let id = ids[program] else { continue }
            if try Self.attachedIDs(on: cgroup, type: program.attachType, path: path).contains(id) { found.insert(program) }
        }
        return found
    }

    /// The ids of every program attached to the cgroup itself at `type`, anyone's.
    static func attachedIDs(on cgroup: borrowing FileDescriptor, type: UInt32, path: String) throws(SocketProgramError) -> [UInt32] {
        var capacity: UInt32 = 64
        while true {
            var ids = [UInt32](repeating: 0, count: Int(capacity))
            var count = capacity
            if vx_bpf_prog_query(cgroup.raw, type, &ids, &count) == 0 { return Array(ids.prefix(Int(min(count, capacity)))) }
            guard errno == ENOSPC, count > capacity else { throw .system(SystemError("bpf: listing the programs on \(path) (BPF_PROG_QUERY)")) }
            capacity = count
        }
    }

    /// The calling thread's network namespace, by its cookie: the owner vpnd writes and
    /// recognises, and the only namespace where the port-853 refusal acts.
    public static func currentOwner() throws(SocketProgramError) -> UInt64 {
        let cookie = vx_netns_cookie()
        guard cookie != 0 else { throw .system(SystemError("reading the network namespace's cookie (SO_NETNS_COOKIE, Linux 5.14)")) }
        return cookie
    }

    public func attach(_ program: SocketProgram, to cgroup: borrowing FileDescriptor, path: String) throws(SocketProgramError) {
        guard let loaded = programs[program] else { throw .notLoaded(program: program.name, path: path, because: namesFailure) }
        guard vx_bpf_prog_attach(loaded.raw, cgroup.raw, program.attachType) == 0 else {
            throw .system(SystemError("bpf: attaching \(program.name) to \(path)"))
        }
    }

    public func detach(_ program: SocketProgram, from cgroup: borrowing FileDescriptor, path: String) throws(SocketProgramError) {
        guard let loaded = programs[program] else { return }
        guard vx_bpf_prog_detach(loaded.raw, cgroup.raw, program.attachType) == 0 else {
            throw .system(SystemError("bpf: detaching \(program.name) from \(path)"))
        }
    }

    /// The settings for the cgroup with this id (a program of ours must be attached there:
    /// the storage exists from the first attachment on). The kernel's counters start from
    /// `counters` (an earlier vpnd's, taken over) or 0.
    public func write(_ settings: SocketSettings, cgroup id: UInt64, counters: SocketStorage? = nil) throws(SocketProgramError) {
        var value = SocketStorage(settings: settings, owner: owner)
        value.root = root
        if let counters {
            value.guardDrops = counters.guardDrops
            value.socketRefusals = counters.socketRefusals
            value.encryptedDNSRefusals = counters.encryptedDNSRefusals
            value.namesRedirected = counters.namesRedirected
            value.nscdRefused = counters.nscdRefused
        }
        let bytes = value.bytes + [UInt8](repeating: 0, count: max(0, storageSize - SocketStorage.size))
        var key = id
        guard bytes.withUnsafeBytes({ vx_bpf_map_update(storage.raw, &key, $0.baseAddress) }) == 0 else {
            throw .system(SystemError("bpf: storing the socket settings of cgroup \(id)"))
        }
    }

    /// The path guard's map made to hold exactly `known` (before the guard is attached, so
    /// that it never meets an empty map).
    public func setKnown(_ wanted: [UInt64: Bool]) throws(SocketProgramError) {
        for (id, onPath) in wanted where knownNow[id] != onPath {
            var key = id, value: UInt32 = onPath ? 1 : 0
            guard vx_bpf_map_update(known.raw, &key, &value) == 0 else { throw .system(SystemError("bpf: adding cgroup \(id) to the path guard's map")) }
            knownNow[id] = onPath
        }
        for id in knownNow.keys where wanted[id] == nil {
            var key = id
            guard vx_bpf_map_delete(known.raw, &key) == 0 || errno == ENOENT else { throw .system(SystemError("bpf: removing cgroup \(id) from the path guard's map")) }
            knownNow[id] = nil
        }
    }

    /// The let-out map made to hold exactly `wanted`: the namespaces whose forwarded
    /// packets the host's rules route (ContainerRules), applied after those rules.
    public func setLetOut(_ wanted: [UInt64: ForeignNamespaces.Place]) throws(SocketProgramError) {
        try holdAgain(keeping: Set(wanted.keys))
        for (cookie, place) in wanted where letOutNow[cookie] != place {
            var key = cookie
            guard place.bytes.withUnsafeBytes({ vx_bpf_map_update(allowedNamespaces.raw, &key, $0.baseAddress) }) == 0 else {
                throw .system(SystemError("bpf: letting network namespace \(cookie) out"))
            }
            letOutNow[cookie] = place
        }
    }

    /// The namespaces let out but not in `kept` held again: before the rules that routed
    /// them go, so that none of their packets meets the host's routing unmarked. An
    /// earlier vpnd's let-out maps too: its programs stay attached until the first apply
    /// has put its own table in place, and must not let out what that table no longer
    /// routes.
    public func holdAgain(keeping kept: Set<UInt64>) throws(SocketProgramError) {
        for index in earlierLetOut.indices {
            for cookie in earlierLetOut[index].cookies.subtracting(kept) {
                var key = cookie
                guard vx_bpf_map_delete(earlierLetOut[index].map.raw, &key) == 0 || errno == ENOENT else {
                    throw .system(SystemError("bpf: holding network namespace \(cookie) again (the earlier vpnd's map)"))
                }
                earlierLetOut[index].cookies.remove(cookie)
            }
        }
        for cookie in Set(letOutNow.keys).subtracting(kept) {
            var key = cookie
            guard vx_bpf_map_delete(allowedNamespaces.raw, &key) == 0 || errno == ENOENT else { throw .system(SystemError("bpf: holding network namespace \(cookie) again")) }
            letOutNow[cookie] = nil
        }
    }

    /// The members' network namespaces other than vpnd's that the programs have seen (a
    /// socket made there, or a packet dropped), by cookie.
    public func foreignNamespaces() -> [ForeignNamespaces.Seen] {
        Self.entries(of: seenNamespaces.raw, valueSize: ForeignNamespaces.seenValueSize).compactMap { ForeignNamespaces.Seen(cookie: $0.key, value: $0.value) }
    }

    /// What an earlier vpnd's programs knew of members' namespaces, taken over before the
    /// first apply: the namespaces it saw, and those it let out with where they are
    /// (returned), by which the first apply finds them and keeps routing them (without them
    /// a routed container whose last socket's maker was gone stayed held for good). Its
    /// let-out maps are kept, for `holdAgain` to hold what the new table does not route.
    public func takeOver(_ adopted: AdoptedSocketPrograms) -> [UInt64: ForeignNamespaces.Place] {
        var places: [UInt64: ForeignNamespaces.Place] = [:]
        for map in adopted.earlierSeenMaps {
            var (type, keySize, valueSize) = (UInt32(0), UInt32(0), UInt32(0))
            var name = [CChar](repeating: 0, count: 17)
            guard vx_bpf_map_info(map.raw, &type, &keySize, &valueSize, &name) == 0 else { continue }
            for entry in Self.entries(of: map.raw, valueSize: valueSize) {
                var key = entry.key
                // An earlier vpnd's shorter value, its cgroup unknown (0).
                let value = entry.value + [UInt8](repeating: 0, count: max(0, Int(ForeignNamespaces.seenValueSize) - entry.value.count))
                _ = value.withUnsafeBytes { vx_bpf_map_update(seenNamespaces.raw, &key, $0.baseAddress) }
            }
        }
        for map in adopted.earlierLetOutMaps {
            guard let copy = AdoptedSocketPrograms.Found.copy(map) else { continue }
            var (type, keySize, valueSize) = (UInt32(0), UInt32(0), UInt32(0))
            var name = [CChar](repeating: 0, count: 17)
            guard vx_bpf_map_info(map.raw, &type, &keySize, &valueSize, &name) == 0 else { continue }
            let entries = Self.entries(of: map.raw, valueSize: valueSize)
            for entry in entries { places[entry.key] = ForeignNamespaces.Place(bytes: entry.value) }
            earlierLetOut.append((owned.insert(copy), Set(entries.map(\.key))))
        }
        return places
    }

    /// Every entry of a hash map keyed by a u64 (at most the namespace maps' size).
    static func entries(of map: Int32, valueSize: UInt32) -> [(key: UInt64, value: [UInt8])] {
        var found: [(key: UInt64, value: [UInt8])] = []
        var key: UInt64 = 0
        var next: UInt64 = 0
        var first = true
        while (first ? vx_bpf_map_next_key(map, nil, &next) : vx_bpf_map_next_key(map, &key, &next)) == 0, found.count < Int(ForeignNamespaces.entries) {
            first = false
            key = next
            var value = [UInt8](repeating: 0, count: Int(valueSize))
            var lookup = key
            if value.withUnsafeMutableBytes({ vx_bpf_map_lookup(map, &lookup, $0.baseAddress) }) == 0 { found.append((key, value)) }
        }
        return found
    }

    /// What the programs hold for the cgroup now, counters included; nil if nothing of
    /// ours is attached there.
    public func read(cgroup id: UInt64) -> SocketStorage? {
        Self.read(map: storage.raw, cgroup: id)
    }

    /// The map may be another vpnd's, of another version (its storage longer or shorter: the
    /// layout only grows at its end), or not a storage at all (a program's other maps): the
    /// kernel writes its own value size, so the buffer is sized from what it says the map is.
    static func read(map: Int32, cgroup id: UInt64) -> SocketStorage? {
        var (type, keySize, valueSize) = (UInt32(0), UInt32(0), UInt32(0))
        var name = [CChar](repeating: 0, count: 17)
        guard vx_bpf_map_info(map, &type, &keySize, &valueSize, &name) == 0, type == storageMapType,
              keySize == UInt32(MemoryLayout<UInt64>.size), text(name) == storageMapName,
              valueSize >= UInt32(SocketStorage.sizeWithOwner), valueSize <= 4096 else { return nil }
        var key = id
        var bytes = [UInt8](repeating: 0, count: max(Int(valueSize), SocketStorage.size))
        guard bytes.withUnsafeMutableBytes({ vx_bpf_map_lookup(map, &key, $0.baseAddress) }) == 0 else { return nil }
        return SocketStorage(bytes: Array(bytes.prefix(SocketStorage.size)))
    }
}

/// What an earlier vpnd of this network namespace left attached, found at start (finding a
/// program by id needs CAP_SYS_ADMIN, which vpnd holds only then): every cgroup's
/// programs named like ours whose storage names this namespace as owner, with the
/// descriptors that detach them once the new ones are in place.
public final class AdoptedSocketPrograms {
    public final class Program {
        public let program: SocketProgram
        let descriptor: FileDescriptor
        init(program: SocketProgram, descriptor: consuming FileDescriptor) {
            self.program = program
            self.descriptor = descriptor
        }
    }

    /// By cgroup path relative to the hierarchy's root.
    public private(set) var byCgroup: [String: [Program]] = [:]
    /// The earlier storage map each cgroup's programs use (owned by `maps`): its counters.
    private var storageMaps: [String: DescriptorNumber] = [:]
    private var maps = DescriptorTable()
    /// The earlier programs' maps of members' namespaces (seen, let out), each once (owned
    /// by `maps`), for `SocketProgramSet.takeOver`.
    public private(set) var earlierSeenMaps: [DescriptorNumber] = []
    public private(set) var earlierLetOutMaps: [DescriptorNumber] = []
    private var namespaceMapIDs: Set<UInt32> = []

    public init() {}

    /// Walks the whole hierarchy once (a program of ours can sit on any cgroup a profile
    /// joined: a user's slice, an app's scope).
    public init(hierarchy mountPoint: String, owner: UInt64) {
        Self.walk(mountPoint) { relative, _, found in
            var programs: [Program] = []
            for item in found where item.owner == owner {
                if storageMaps[relative] == nil, let map = Found.copy(item.storage) { storageMaps[relative] = maps.insert(map) }
                for (id, map) in item.namespaceMaps where namespaceMapIDs.insert(id).inserted {
                    guard let copy = Found.copy(map.number) else { continue }
                    if map.seen { earlierSeenMaps.append(maps.insert(copy)) } else { earlierLetOutMaps.append(maps.insert(copy)) }
                }
                if let program = Found.copy(item.descriptor.number) { programs.append(Program(program: item.kind, descriptor: program)) }
            }
            if !programs.isEmpty { byCgroup[relative] = programs }
        }
    }

    /// A program of ours found on a cgroup: its kind, a descriptor of it, the owner its
    /// storage names (nil: unreadable), and that storage map.
    final class Found {
        let kind: SocketProgram
        let descriptor: FileDescriptor
        let owner: UInt64?
        let storage: DescriptorNumber?
        /// Its maps of members' namespaces, by map id: seen (true) or let out.
        var namespaceMaps: [UInt32: (number: DescriptorNumber, seen: Bool)] = [:]
        private var owned = DescriptorTable()

        /// `storage`: a map descriptor it takes over, or -1.
        init(kind: SocketProgram, descriptor: consuming FileDescriptor, owner: UInt64?, storage: Int32) {
            self.kind = kind
            self.descriptor = descriptor
            self.owner = owner
            self.storage = storage >= 0 ? owned.insert(FileDescriptor(adopting: storage)) : nil
        }

        func keep(namespaceMap map: consuming FileDescriptor, id: UInt32, seen: Bool) {
            namespaceMaps[id] = (owned.insert(map), seen)
        }

        /// A descriptor of its own of what `number` names (the ones here close with this).
        static func copy(_ number: DescriptorNumber?) -> FileDescriptor? {
            guard let number else { return nil }
            let copy = fcntl(number.raw, F_DUPFD_CLOEXEC, 0)
            return copy >= 0 ? FileDescriptor(adopting: copy) : nil
        }
    }

    /// Every cgroup of the hierarchy with the programs named like ours attached to it.
    static func walk(_ mountPoint: String, _ body: (String, UInt64, [Found]) -> Void) {
        var pending = [""]
        while let relative = pending.popLast() {
            let path = relative.isEmpty ? mountPoint : mountPoint + "/" + relative
            guard let directory = try? FileDescriptor.open(path, O_RDONLY | O_DIRECTORY) else { continue }
            var info = stat()
            guard fstat(directory.raw, &info) == 0 else { continue }
            let found = programs(on: directory, cgroup: UInt64(info.st_ino))
            if !found.isEmpty { body(relative, UInt64(info.st_ino), found) }
            for entry in Directory.entries(of: path) where entry.isDirectory {
                pending.append(relative.isEmpty ? entry.name : relative + "/" + entry.name)
            }
        }
    }

    /// The programs named like ours on one cgroup, each with the owner in its storage.
    private static func programs(on cgroup: borrowing FileDescriptor, cgroup cgroupID: UInt64) -> [Found] {
        var found: [Found] = []
        for kind in SocketProgram.allCases {
            var ids = [UInt32](repeating: 0, count: 64)
            var count = UInt32(ids.count)
            guard vx_bpf_prog_query(cgroup.raw, kind.attachType, &ids, &count) == 0 else { continue }
            for id in ids.prefix(Int(min(count, 64))) {
                guard let program = try? FileDescriptor("bpf: program \(id)", returned: vx_bpf_prog_fd_by_id(id)) else { continue }
                var name = [CChar](repeating: 0, count: 17)
                var mapIDs = [UInt32](repeating: 0, count: 8)
                var mapCount = UInt32(mapIDs.count)
                guard vx_bpf_prog_info(program.raw, &name, &mapIDs, &mapCount) == 0,
                      SocketProgram.named(text(name)) == kind else { continue }
                var owner: UInt64?
                var storage: Int32 = -1
                var namespaceMaps: [(id: UInt32, raw: Int32, seen: Bool)] = []
                for mapID in mapIDs.prefix(Int(min(mapCount, 8))) {
                    guard let map = try? FileDescriptor("bpf: map \(mapID)", returned: vx_bpf_map_fd_by_id(mapID)) else { continue }
                    if owner == nil, let value = SocketProgramSet.read(map: map.raw, cgroup: cgroupID) {
                        owner = value.owner
                        storage = map.release()
                    } else if let seen = namespaceMapKind(map.raw) {
                        namespaceMaps.append((mapID, map.release(), seen))
                    }
                }
                let item = Found(kind: kind, descriptor: program, owner: owner, storage: storage)
                for map in namespaceMaps { item.keep(namespaceMap: FileDescriptor(adopting: map.raw), id: map.id, seen: map.seen) }
                found.append(item)
            }
        }
        return found
    }

    /// Whether the map is one of the namespace maps of ours: seen (true), let out (false),
    /// or neither (nil), by its name, type and sizes.
    static func namespaceMapKind(_ map: Int32) -> Bool? {
        var (type, keySize, valueSize) = (UInt32(0), UInt32(0), UInt32(0))
        var name = [CChar](repeating: 0, count: 17)
        guard vx_bpf_map_info(map, &type, &keySize, &valueSize, &name) == 0, keySize == ForeignNamespaces.keySize else { return nil }
        switch (text(name), type, valueSize) {
        case ("vx_netns_seen", ForeignNamespaces.seenType, ForeignNamespaces.seenValueSize), ("vx_netns_seen", ForeignNamespaces.seenType, 16): return true
        // (4 bytes: a vpnd's from before the value said where the namespace is.)
        case ("vx_netns_out", ForeignNamespaces.allowedType, ForeignNamespaces.allowedValueSize), ("vx_netns_out", ForeignNamespaces.allowedType, 4): return false
        default: return nil
        }
    }

    /// Detaches every program of ours whose owner is none of `live` (network namespaces, by
    /// cookie): a vpnd's whose namespace went away without `vpnd --cleanup`. They act on
    /// nothing any more, but each runs at every socket made below its cgroup, and the kernel
    /// takes 64 a cgroup and hook, after which no vpnd can attach there. Returns how many
    /// went, and what could not.
    public static func detachOrphans(hierarchy: CgroupHierarchy, live: Set<UInt64>) -> (detached: Int, failures: [SocketProgramError]) {
        var detached = 0
        var failures: [SocketProgramError] = []
        walk(hierarchy.mountPoint) { relative, _, found in
            guard let cgroup = try? FileDescriptor.open(hierarchy.absolute(relative), O_RDONLY | O_DIRECTORY) else { return }
            for item in found {
                guard let owner = item.owner, !live.contains(owner) else { continue }
                if vx_bpf_prog_detach(item.descriptor.raw, cgroup.raw, item.kind.attachType) == 0 {
                    detached += 1
                } else if errno != ENOENT {
                    failures.append(.system(SystemError("bpf: detaching \(item.kind.name) of a gone network namespace from \(relative.isEmpty ? "the root cgroup" : relative)")))
                }
            }
        }
        return (detached, failures)
    }

    /// What the earlier programs hold for the cgroup (its settings and the kernel's counters).
    public func storage(of path: String, id: UInt64) -> SocketStorage? {
        storageMaps[path].flatMap { SocketProgramSet.read(map: $0.raw, cgroup: id) }
    }

    /// Detaches what was adopted on `path` (after the new programs are attached there, so
    /// that no socket meets the cgroup without them).
    public func detach(_ path: String, cgroup: borrowing FileDescriptor) -> [SocketProgramError] {
        var failures: [SocketProgramError] = []
        defer { forget(path) }
        for adopted in byCgroup[path] ?? [] {
            if vx_bpf_prog_detach(adopted.descriptor.raw, cgroup.raw, adopted.program.attachType) != 0, errno != ENOENT {
                failures.append(.system(SystemError("bpf: detaching the earlier \(adopted.program.name) from \(path)")))
            }
        }
        return failures
    }

    /// Detaches every program the network namespace `owner` attached, anywhere in the
    /// hierarchy (vpnd --cleanup, and a test's namespace before it is deleted).
    public static func detachAll(hierarchy: CgroupHierarchy, owner: UInt64) -> [SocketProgramError] {
        let adopted = AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner)
        var failures: [SocketProgramError] = []
        for path in Array(adopted.byCgroup.keys) {
            guard let cgroup = try? FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY) else { continue }
            failures += adopted.detach(path, cgroup: cgroup)
        }
        return failures
    }

    /// Forgets what was adopted on `path` (the cgroup is gone: so are its attachments).
    public func forget(_ path: String) {
        byCgroup[path] = nil
        if let map = storageMaps.removeValue(forKey: path) { maps.close(map) }
    }
}

/// A NUL-terminated buffer the kernel filled (a verifier log, a program's name).
func text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
