import BPF
import Descriptors
import Glibc

/// A failure of the socket programs in the kernel: loading them, their maps, attaching and
/// detaching them, their settings. Kept as a value (its SystemError, the program's
/// ProgramError) until it is logged or shown; `code` is the errno its callers tell
/// "gone" (ENOENT, ESTALE) and "full" (E2BIG) by.
public indirect enum SocketProgramError: Error, CustomStringConvertible, Sendable {
    /// A bpf(2) or other system call failed; its operation says what was being done.
    case system(SystemError)
    /// The verifier refused a program: its last words.
    case loadRefused(SystemError, verifier: String)
    /// A program's code did not assemble.
    case assembling(program: String, ProgramError)
    /// The kernel's types did not hold what the names program calls.
    case kernelTypes(ProgramError)
    /// A program not loaded on this kernel, asked to be attached; `because` is why not.
    case notLoaded(program: String, path: String, because: SocketProgramError?)
    /// The cgroup at `path` is another than the one planned (made again since).
    case cgroupReplaced(path: String, id: UInt64)
    /// A DNS proxy key outside the steering program's.
    case keyOutsideSteering(key: UInt32, keys: ClosedRange<UInt32>)

    public var code: Int32 {
        switch self {
        case let .system(error), let .loadRefused(error, _): error.code
        case .assembling, .keyOutsideSteering: EINVAL
        case .kernelTypes: ENOENT
        case .notLoaded: EOPNOTSUPP
        case .cgroupReplaced: ESTALE
        }
    }

    public var description: String {
        switch self {
        case let .system(error): error.description
        case let .loadRefused(error, verifier): Self.words(error, verifier)
        case let .assembling(program, error): Self.words(SystemError("assembling \(program)", code: code), error.description)
        case let .kernelTypes(error): Self.words(SystemError("reading the kernel's types (/sys/kernel/btf/vmlinux)", code: code), error.description)
        case let .notLoaded(program, path, because):
            Self.words(SystemError("attaching \(program) to \(path)", code: code), because?.description ?? "not loaded")
        case let .cgroupReplaced(path, id): Self.words(SystemError("attach to \(path)", code: code), "its id is not \(id) any more")
        case let .keyOutsideSteering(key, keys): SystemError("bpf: setting a DNS proxy socket at key \(key), outside \(keys)", code: code).description
        }
    }

    private static func words(_ error: SystemError, _ detail: String) -> String {
        error.description + (detail.isEmpty ? "" : " (\(detail))")
    }
}
