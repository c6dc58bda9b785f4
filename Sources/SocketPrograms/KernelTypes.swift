import BPF

/// The kernel's own type information (BTF, /sys/kernel/btf/vmlinux): what a program that
/// calls kernel functions (kfuncs) names them by. A kfunc has no stable number, as a helper
/// has: the call carries the id of the function's BTF record in this kernel's build, and a
/// cast to a kernel struct the id of the struct's. Found by name, once, at start.
///
/// The format (Documentation/bpf/btf.rst): a header, then the type records one after the
/// other, numbered from 1, each 12 bytes (name offset, info: kind and count, size or type)
/// followed by data whose length its kind and count give; then the string table.
public struct KernelTypes: Hashable, Sendable {
    public enum Kind: UInt32, Sendable {
        case structure = 4
        case function = 12
    }

    /// Wanted names -> their id, for the kinds asked.
    public private(set) var ids: [String: Int32] = [:]

    /// Reads the records of `bytes` (a whole BTF blob) and keeps the ids of the `wanted`
    /// names of their kind; a malformed blob is refused.
    public init(parsing bytes: [UInt8], wanted: [String: Kind]) throws(ProgramError) {
        func u32(_ at: Int) -> UInt32 {
            UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        }
        guard bytes.count >= 24, bytes[0] == 0x9f, bytes[1] == 0xeb else { throw .notBTF }
        let headerLength = Int(u32(4))
        let typeStart = headerLength + Int(u32(8)), typeEnd = typeStart + Int(u32(12))
        let stringStart = headerLength + Int(u32(16)), stringEnd = stringStart + Int(u32(20))
        guard headerLength >= 24, typeStart <= typeEnd, typeEnd <= bytes.count, stringStart <= stringEnd, stringEnd <= bytes.count else {
            throw .btfSectionsOutOfBounds
        }
        // Names are compared as bytes at their offset, without making a string of each.
        let targets = wanted.map { (name: Array($0.key.utf8), text: $0.key, kind: $0.value.rawValue) }
        var at = typeStart
        var id: Int32 = 1
        while at < typeEnd {
            guard at + 12 <= typeEnd else { throw .btfTypeCutShort(id: id) }
            let nameOffset = Int(u32(at)), info = u32(at + 4)
            let kind = (info >> 24) & 0x1f, count = Int(info & 0xffff)
            for target in targets where target.kind == kind && ids[target.text] == nil {
                let start = stringStart + nameOffset, end = start + target.name.count
                if end < stringEnd, bytes[end] == 0, bytes[start..<end].elementsEqual(target.name) { ids[target.text] = id }
            }
            let extra: Int
            switch kind {
            case 1, 14, 17: extra = 4 // int, var, decl_tag
            case 3: extra = 12 // array
            case 4, 5, 15, 19: extra = 12 * count // struct, union, datasec, enum64
            case 6, 13: extra = 8 * count // enum, func_proto
            case 0, 2, 7, 8, 9, 10, 11, 12, 16, 18: extra = 0
            default: throw .btfUnknownKind(id: id, kind: kind)
            }
            at += 12 + extra
            id += 1
        }
        for (name, _) in wanted where ids[name] == nil { throw .kernelLacks(name) }
    }
}

/// The kernel's names the unix-connect program (`NameFollowing`) calls and casts to.
public struct NameFollowingTypes: Hashable, Sendable {
    public var castToKernelContext: Int32
    public var readOnlyCast: Int32
    public var setSunPath: Int32
    public var sockaddrUn: Int32

    public init(castToKernelContext: Int32, readOnlyCast: Int32, setSunPath: Int32, sockaddrUn: Int32) {
        self.castToKernelContext = castToKernelContext
        self.readOnlyCast = readOnlyCast
        self.setSunPath = setSunPath
        self.sockaddrUn = sockaddrUn
    }

    public static let wanted: [String: KernelTypes.Kind] = [
        "bpf_cast_to_kern_ctx": .function, "bpf_rdonly_cast": .function,
        "bpf_sock_addr_set_sun_path": .function, "sockaddr_un": .structure,
    ]

    /// From the kernel's BTF; the error names what is missing (a kernel before 6.7 has no
    /// bpf_sock_addr_set_sun_path).
    public init(btf bytes: [UInt8]) throws(ProgramError) {
        let types = try KernelTypes(parsing: bytes, wanted: Self.wanted)
        self.init(castToKernelContext: types.ids["bpf_cast_to_kern_ctx"]!, readOnlyCast: types.ids["bpf_rdonly_cast"]!,
                  setSunPath: types.ids["bpf_sock_addr_set_sun_path"]!, sockaddrUn: types.ids["sockaddr_un"]!)
    }
}
