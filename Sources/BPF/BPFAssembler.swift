/// A few dozen instructions written as calls, with named jump targets: the kernel's
/// verifier takes jump offsets counted in instructions from the next one, which are easy
/// to get wrong by hand and wrong again after the next edit. Labels are resolved once, at
/// `assemble()`.
public struct BPFAssembler: Sendable {
    public enum Condition: Sendable {
        case equal, notEqual, less

        var operation: UInt8 {
            switch self {
            case .equal: BPFCode.jeq
            case .notEqual: BPFCode.jne
            case .less: BPFCode.jlt
            }
        }
    }

    /// The name the programs' code throws by (SocketPrograms).
    private enum Item: Sendable {
        case instruction(BPFInstruction)
        case jump(BPFInstruction, to: String)
        case label(String)
    }

    private var items: [Item] = []

    public init() {}

    public mutating func label(_ name: String) { items.append(.label(name)) }

    public mutating func move(_ destination: BPFRegister, _ source: BPFRegister) {
        emit(BPFCode.alu64 | BPFCode.mov | BPFCode.register, destination, source)
    }

    public mutating func move(_ destination: BPFRegister, _ value: Int32) {
        emit(BPFCode.alu64 | BPFCode.mov | BPFCode.immediate, destination, immediate: value)
    }

    public mutating func add(_ destination: BPFRegister, _ value: Int32) {
        emit(BPFCode.alu64 | BPFCode.add | BPFCode.immediate, destination, immediate: value)
    }

    public mutating func and(_ destination: BPFRegister, _ value: Int32) {
        emit(BPFCode.alu64 | BPFCode.and | BPFCode.immediate, destination, immediate: value)
    }

    public mutating func and(_ destination: BPFRegister, _ source: BPFRegister) {
        emit(BPFCode.alu64 | BPFCode.and | BPFCode.register, destination, source)
    }

    public mutating func shiftLeft(_ destination: BPFRegister, _ source: BPFRegister) {
        emit(BPFCode.alu64 | BPFCode.lsh | BPFCode.register, destination, source)
    }

    public mutating func shiftRight(_ destination: BPFRegister, _ source: BPFRegister) {
        emit(BPFCode.alu64 | BPFCode.rsh | BPFCode.register, destination, source)
    }

    public mutating func shiftRight(_ destination: BPFRegister, _ bits: Int32) {
        emit(BPFCode.alu64 | BPFCode.rsh | BPFCode.immediate, destination, immediate: bits)
    }

    /// The low `bits` (16, 32 or 64) of `register`, as loaded from memory that holds them in
    /// network order, become their value, the bits above cleared: a byte swap on a
    /// little-endian machine, only the clearing on a big-endian one (BPF_END | BPF_FROM_BE).
    public mutating func fromNetworkOrder(_ register: BPFRegister, bits: Int32) {
        emit(BPFCode.alu | BPFCode.end | BPFCode.fromBigEndian, register, immediate: bits)
    }

    /// destination = *(size *)(source + offset)
    public mutating func load(_ size: BPFSize, _ destination: BPFRegister, from source: BPFRegister, _ offset: Int) {
        emit(BPFCode.ldx | size.rawValue | BPFCode.mem, destination, source, offset: offset)
    }

    /// *(size *)(destination + offset) = source
    public mutating func store(_ size: BPFSize, _ source: BPFRegister, to destination: BPFRegister, _ offset: Int) {
        emit(BPFCode.stx | size.rawValue | BPFCode.mem, destination, source, offset: offset)
    }

    /// *(size *)(destination + offset) = value
    public mutating func store(_ size: BPFSize, _ value: Int32, to destination: BPFRegister, _ offset: Int) {
        emit(BPFCode.st | size.rawValue | BPFCode.mem, destination, offset: offset, immediate: value)
    }

    /// *(u64 *)(destination + offset) += source, atomically (a counter other CPUs add to).
    public mutating func atomicAdd(_ source: BPFRegister, to destination: BPFRegister, _ offset: Int) {
        emit(BPFCode.stx | BPFSize.doubleword.rawValue | BPFCode.atomic, destination, source, offset: offset, immediate: Int32(BPFCode.add))
    }

    /// The map's address, from its descriptor (the kernel swaps it in at load): two slots.
    public mutating func loadMap(_ destination: BPFRegister, descriptor: Int32) {
        items.append(.instruction(BPFInstruction(code: BPFCode.ld | BPFSize.doubleword.rawValue | BPFCode.imm, destination: destination,
                                                 source: BPFCode.pseudoMapDescriptor, immediate: descriptor)))
        items.append(.instruction(BPFInstruction(code: 0)))
    }

    /// r0 = the element of `map` whose key is on the stack at fp + `offset`, or 0.
    public mutating func lookUp(map descriptor: Int32, keyAt offset: Int32) {
        loadMap(.r1, descriptor: descriptor)
        move(.r2, .r10)
        add(.r2, offset)
        call(.mapLookupElement)
    }

    /// A jump on the low 32 bits of `register` against `value`: context fields are 32 bits
    /// wide, and a 64-bit comparison would sign-extend an immediate with its top bit set.
    public mutating func jump(if register: BPFRegister, _ condition: Condition, _ value: UInt32, to target: String) {
        items.append(.jump(BPFInstruction(code: BPFCode.jmp32 | condition.operation | BPFCode.immediate, destination: register,
                                          immediate: Int32(bitPattern: value)), to: target))
    }

    public mutating func jump(if register: BPFRegister, _ condition: Condition, _ other: BPFRegister, to target: String) {
        items.append(.jump(BPFInstruction(code: BPFCode.jmp | condition.operation | BPFCode.register, destination: register,
                                          source: other.rawValue), to: target))
    }

    /// A jump on all 64 bits: the only comparison the verifier allows on a pointer (a map
    /// lookup's result is compared with 0 before it is used).
    public mutating func jumpIfZero(_ register: BPFRegister, to target: String) {
        items.append(.jump(BPFInstruction(code: BPFCode.jmp | BPFCode.jeq | BPFCode.immediate, destination: register), to: target))
    }

    /// A jump on all 64 bits of a register that is not 0.
    public mutating func jumpIfNotZero(_ register: BPFRegister, to target: String) {
        items.append(.jump(BPFInstruction(code: BPFCode.jmp | BPFCode.jne | BPFCode.immediate, destination: register), to: target))
    }

    public mutating func jump(to target: String) {
        items.append(.jump(BPFInstruction(code: BPFCode.jmp | BPFCode.ja), to: target))
    }

    public mutating func call(_ helper: BPFHelper) {
        emit(BPFCode.jmp | BPFCode.call, .r0, immediate: helper.rawValue)
    }

    /// A kernel function (kfunc) by the id of its BTF record in the running kernel's
    /// vmlinux BTF (`KernelTypes`): arguments in r1-r5, result in r0, as a helper.
    public mutating func callKernelFunction(_ id: Int32) {
        emit(BPFCode.jmp | BPFCode.call, .r0, BPFRegister(rawValue: BPFCode.pseudoKernelFunctionCall)!, immediate: id)
    }

    /// return value
    public mutating func exit(returning value: Int32) {
        move(.r0, value)
        emit(BPFCode.jmp | BPFCode.exit, .r0)
    }

    public func assemble() throws(ProgramError) -> [BPFInstruction] {
        var positions: [String: Int] = [:]
        var count = 0
        for item in items {
            switch item {
            case let .label(name):
                guard positions[name] == nil else { throw .labelDefinedTwice(name) }
                positions[name] = count
            case .instruction, .jump: count += 1
            }
        }
        var program: [BPFInstruction] = []
        for item in items {
            switch item {
            case .label: continue
            case let .instruction(instruction): program.append(instruction)
            case .jump(var instruction, let target):
                guard let position = positions[target] else { throw .undefinedLabel(target) }
                let offset = position - (program.count + 1)
                guard let narrow = Int16(exactly: offset) else { throw .jumpTooFar(to: target) }
                instruction.offset = narrow
                program.append(instruction)
            }
        }
        return program
    }

    private mutating func emit(_ code: UInt8, _ destination: BPFRegister, _ source: BPFRegister = .r0, offset: Int = 0, immediate: Int32 = 0) {
        items.append(.instruction(BPFInstruction(code: code, destination: destination, source: source.rawValue,
                                                 offset: Int16(offset), immediate: immediate)))
    }
}
