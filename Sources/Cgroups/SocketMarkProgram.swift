import CLinux
import Descriptors
import Glibc

/// The cgroup socket program that gives sockets their mark at creation ("birth marks"):
/// attached to a cgroup, every socket a process there makes carries the cgroup's mark
/// before its first route lookup, so route and source address come from the mark's table
/// (a member's `getsockname()` shows the tunnel's address) instead of being re-routed and
/// source-NATted later by nftables. The bpf(2) calls are in CLinux/socket_mark_program.h.
///
/// Loading needs CAP_BPF and CAP_NET_ADMIN; attaching, and changing a cgroup's mark, need
/// only the descriptors this value holds (the program's and its storage's) and a cgroup
/// directory opened for reading. So vpnd loads it once at start, before it drops every
/// capability but CAP_NET_ADMIN, and attaches and detaches for as long as it runs.
public final class SocketMarkProgram {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
        public let code: Int32
        init(_ operation: String, code: Int32 = errno, detail: String = "") {
            self.code = code
            description = SystemError(operation, code: code).description + (detail.isEmpty ? "" : " (\(detail))")
        }
        init(_ error: SystemError) { self.init(error.operation, code: error.code) }
    }

    private let program: FileDescriptor
    private let storage: FileDescriptor

    public init() throws(Failure) {
        let storage: FileDescriptor
        do { storage = try FileDescriptor("bpf: creating the cgroup storage for socket marks", returned: vx_socket_mark_storage()) } catch { throw Failure(error) }
        var log = [CChar](repeating: 0, count: 4096)
        let program = vx_socket_mark_program(storage.raw, &log, UInt32(log.count))
        guard program >= 0 else {
            throw Failure("bpf: loading the socket mark program", code: errno, detail: String(cString: log).split(separator: "\n").suffix(2).joined(separator: "; "))
        }
        self.program = FileDescriptor(adopting: program)
        self.storage = storage
    }

    /// Attaches to the cgroup directory at `path` if it still is the cgroup `id` (a
    /// cgroup made again under the same path has a new one), with `mark` for its sockets.
    public func attach(path: String, id: UInt64, mark: UInt32) throws(Failure) -> SocketMarkLink {
        let directory: FileDescriptor
        do { directory = try .open(path, O_RDONLY | O_DIRECTORY) } catch { throw Failure(error) }
        var info = stat()
        guard fstat(directory.raw, &info) == 0 else { throw Failure("stat \(path)") }
        guard UInt64(info.st_ino) == id else { throw Failure("attach to \(path)", code: ESTALE, detail: "its id is \(info.st_ino), not \(id)") }
        let link: FileDescriptor
        do { link = try FileDescriptor("bpf: attaching the socket mark program to \(path)", returned: vx_socket_mark_link(program.raw, directory.raw)) } catch { throw Failure(error) }
        let attached = SocketMarkLink(descriptor: link, id: id, mark: mark)
        try setMark(mark, cgroup: id)
        return attached
    }

    /// A new mark for an attached cgroup's new sockets (a reload that changed it).
    public func update(_ link: SocketMarkLink, mark: UInt32) throws(Failure) {
        try setMark(mark, cgroup: link.id)
        link.mark = mark
    }

    private func setMark(_ mark: UInt32, cgroup id: UInt64) throws(Failure) {
        guard vx_socket_mark_set(storage.raw, id, mark) == 0 else { throw Failure("bpf: storing mark \(mark) for cgroup \(id)") }
    }
}

/// One attachment of the socket mark program: it lasts exactly as long as this value
/// (closing a BPF link's last descriptor detaches it), and ends by itself if the cgroup is
/// removed.
public final class SocketMarkLink {
    private let descriptor: FileDescriptor
    public let id: UInt64
    public fileprivate(set) var mark: UInt32

    fileprivate init(descriptor: consuming FileDescriptor, id: UInt64, mark: UInt32) {
        self.descriptor = descriptor
        self.id = id
        self.mark = mark
    }
}
