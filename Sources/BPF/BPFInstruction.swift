/// One eBPF instruction as the kernel reads it (`struct bpf_insn`, 8 bytes): the opcode,
/// the destination and source registers in one byte, a signed 16-bit offset and a signed
/// 32-bit immediate, little-endian as on every machine vpnexec runs on.
public struct BPFInstruction: Hashable, Sendable {
    public var code: UInt8
    public var destination: BPFRegister
    public var source: UInt8
    public var offset: Int16
    public var immediate: Int32

    public init(code: UInt8, destination: BPFRegister = .r0, source: UInt8 = 0, offset: Int16 = 0, immediate: Int32 = 0) {
        self.code = code
        self.destination = destination
        self.source = source
        self.offset = offset
        self.immediate = immediate
    }

    /// The 8 bytes of `struct bpf_insn`: dst_reg is the low nibble of the second byte.
    public var bytes: [UInt8] {
        let offset = UInt16(bitPattern: offset), immediate = UInt32(bitPattern: immediate)
        return [code, destination.rawValue | (source << 4), UInt8(offset & 0xff), UInt8(offset >> 8),
                UInt8(immediate & 0xff), UInt8((immediate >> 8) & 0xff), UInt8((immediate >> 16) & 0xff), UInt8(immediate >> 24)]
    }
}

/// r0 holds return values, r1-r5 arguments (r1 the context on entry), r6-r9 survive
/// helper calls, r10 is the read-only frame pointer.
public enum BPFRegister: UInt8, Sendable {
    case r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10
}

/// Opcode parts from linux/bpf_common.h and linux/bpf.h.
enum BPFCode {
    // Classes.
    static let ld: UInt8 = 0x00, ldx: UInt8 = 0x01, st: UInt8 = 0x02, stx: UInt8 = 0x03
    static let alu: UInt8 = 0x04, jmp: UInt8 = 0x05, jmp32: UInt8 = 0x06, alu64: UInt8 = 0x07
    // Sources of an ALU or jump operand.
    static let immediate: UInt8 = 0x00, register: UInt8 = 0x08
    // Memory modes.
    static let imm: UInt8 = 0x00, mem: UInt8 = 0x60, atomic: UInt8 = 0xc0
    // ALU operations.
    static let add: UInt8 = 0x00, and: UInt8 = 0x50, lsh: UInt8 = 0x60, rsh: UInt8 = 0x70, mov: UInt8 = 0xb0, end: UInt8 = 0xd0
    /// The source bit of BPF_END: from (or to) big-endian.
    static let fromBigEndian: UInt8 = 0x08
    // Jump operations.
    static let ja: UInt8 = 0x00, jeq: UInt8 = 0x10, jne: UInt8 = 0x50, call: UInt8 = 0x80, exit: UInt8 = 0x90, jlt: UInt8 = 0xa0
    /// `src_reg` of a 64-bit immediate load that names a map by descriptor.
    static let pseudoMapDescriptor: UInt8 = 1
    /// `src_reg` of a call whose immediate is a kfunc's BTF id in vmlinux (BPF_PSEUDO_KFUNC_CALL).
    static let pseudoKernelFunctionCall: UInt8 = 2
}

/// Sizes of a memory access.
public enum BPFSize: UInt8, Sendable {
    case word = 0x00, halfword = 0x08, byte = 0x10, doubleword = 0x18
}

/// Helpers by their number in `enum bpf_func_id` (stable kernel ABI).
public enum BPFHelper: Int32, Sendable {
    case mapLookupElement = 1
    case mapUpdateElement = 2
    case getCurrentPidTgid = 14
    case skbCgroupID = 79
    case getCurrentCgroupID = 80
    case skbLoadBytes = 26
    case getSocketCookie = 46
    case socketRelease = 86
    case getLocalStorage = 81
    case getNetnsCookie = 122
    case getCurrentAncestorCgroupID = 123
    case socketAssign = 124
}
