/// Why a program could not be made: its code did not assemble (a bug of ours, found at
/// start), or the kernel's type information (BTF) did not hold what the program calls.
/// Never an errno: loading, where the kernel answers, is SocketProgramError's.
public enum ProgramError: Error, CustomStringConvertible, Sendable, Equatable {
    case labelDefinedTwice(String)
    case undefinedLabel(String)
    case jumpTooFar(to: String)
    /// The blob does not start with BTF's magic.
    case notBTF
    case btfSectionsOutOfBounds
    case btfTypeCutShort(id: Int32)
    case btfUnknownKind(id: Int32, kind: UInt32)
    /// The kernel's types name no `name` (a kernel before 6.7 has no bpf_sock_addr_set_sun_path).
    case kernelLacks(String)
    /// A program that calls the kernel's functions was asked for without their types.
    case typesNotGiven(program: String)

    public var description: String {
        switch self {
        case let .labelDefinedTwice(label): "label \(label) defined twice"
        case let .undefinedLabel(label): "jump to undefined label \(label)"
        case let .jumpTooFar(label): "jump to \(label) is too far"
        case .notBTF: "not BTF (no magic)"
        case .btfSectionsOutOfBounds: "BTF sections out of bounds"
        case let .btfTypeCutShort(id): "BTF type \(id) cut short"
        case let .btfUnknownKind(id, kind): "BTF type \(id) of unknown kind \(kind)"
        case let .kernelLacks(name): "the kernel has no \(name)"
        case let .typesNotGiven(program): "the \(program) program needs the kernel's types"
        }
    }
}
