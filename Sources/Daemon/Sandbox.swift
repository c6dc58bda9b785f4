import CLinux
import Control
import Descriptors
import Glibc

/// What vpnd may still change on the file system, enforced by the kernel (Landlock) on
/// vpnd itself: even a vpnd taken over by an attacker, root as it is, cannot write a file,
/// make or remove anything outside these places, cannot execute a program, and cannot make
/// or accept TCP connections. Reading stays free (a reload may name a wg-quick file
/// anywhere). Applied before vpnd starts any thread, so every thread inherits it.
public struct Sandbox: Sendable, Equatable {
    public struct Rule: Sendable, Equatable {
        public var path: String
        public var access: Access
    }

    /// Landlock's file system rights (LANDLOCK_ACCESS_FS_*), the ones vpnd cares about.
    public struct Access: OptionSet, Sendable, Equatable, Hashable {
        public let rawValue: UInt64
        public init(rawValue: UInt64) { self.rawValue = rawValue }
        public static let execute = Access(rawValue: 1 << 0)
        public static let writeFile = Access(rawValue: 1 << 1)
        public static let removeDirectory = Access(rawValue: 1 << 4)
        public static let removeFile = Access(rawValue: 1 << 5)
        public static let makeDirectory = Access(rawValue: 1 << 7)
        public static let makeRegular = Access(rawValue: 1 << 8)
        public static let makeSocket = Access(rawValue: 1 << 9)
        /// Every right that creates a node: char, dir, reg, sock, fifo, block, sym.
        public static let makeAnything = Access(rawValue: 0b1_1111_1100_0000)
        static let refer = Access(rawValue: 1 << 13)     // ABI 2
        static let truncate = Access(rawValue: 1 << 14)  // ABI 3
        static let ioctlDevice = Access(rawValue: 1 << 15)  // ABI 5

        /// Everything vpnd confines at a given ABI: all but reading files and directories.
        static func handled(abi: Int) -> Access {
            var access: Access = [.execute, .writeFile, .removeDirectory, .removeFile, .makeAnything]
            if abi >= 2 { access.insert(.refer) }
            if abi >= 3 { access.insert(.truncate) }
            if abi >= 5 { access.insert(.ioctlDevice) }
            return access
        }
    }

    public var rules: [Rule]
    /// TCP ports vpnd may bind (none: its DNS listeners are bound before it enters the
    /// sandbox) and connect to (resolvers, 53).
    public var tcpListen: ClosedRange<UInt16>?
    public var tcpConnect: [UInt16] = []

    /// vpnd's places: the cgroup2 tree (profile cgroups, cgroup.procs), the network
    /// sysctls, the control socket's directory, the `wg` sockets' directory, and the TUN
    /// device for built-in tunnels; TCP only to ask resolvers.
    /// `stateDirectory`: where the last applied policy is kept (files made, renamed, removed).
    public static func forDaemon(cgroupRoot: String, socketDirectory: String, wireguardDirectory: String,
                                 stateDirectory: String? = nil) -> Sandbox {
        Sandbox(rules: [
            Rule(path: cgroupRoot, access: [.writeFile, .makeDirectory, .removeDirectory]),
            Rule(path: "/proc/sys/net", access: [.writeFile]),
            // The control socket, and the empty marker that the policy applied (AppliedMarker).
            Rule(path: socketDirectory, access: [.makeSocket, .makeRegular, .removeFile]),
            Rule(path: wireguardDirectory, access: [.makeSocket, .removeFile]),
            Rule(path: "/dev/net/tun", access: [.writeFile, .ioctlDevice]),
        ] + (stateDirectory.map { [Rule(path: $0, access: [.writeFile, .makeRegular, .makeDirectory, .removeFile])] } ?? []),
        tcpListen: nil, tcpConnect: [53])
    }

    /// Confines the calling thread and its future threads; returns what was enforced, for
    /// the log and `vpnctl status` (unavailable on kernels without Landlock), as confined:
    /// the caller verifies it.
    public func apply() throws(SystemError) -> SandboxStatus {
        let abi = Int(vx_landlock_abi())
        guard abi >= 1 else {
            let why: String
            switch errno {
            case ENOSYS: why = "this kernel has no Landlock"
            case EOPNOTSUPP: why = "Landlock is not enabled at boot (lsm=)"
            default: why = "\(SystemError("landlock_create_ruleset")) (a system call filter?)"
            }
            return SandboxStatus(state: SandboxStatus.unavailable, reason: why)
        }
        let handled = Access.handled(abi: abi)
        var attributes = vx_landlock_ruleset_attr(handled_access_fs: handled.rawValue,
                                                  handled_access_net: abi >= 4 ? 0b11 : 0, scoped: 0)
        // ABI 1-3 read only the file system field; 4 and 5 also the network one.
        let size = abi >= 6 ? MemoryLayout<vx_landlock_ruleset_attr>.size : abi >= 4 ? 16 : 8
        let ruleset = try Self.createRuleset(&attributes, size: size)
        var places: [String] = []
        for rule in rules {
            // Absent (no TUN device): nothing to allow there.
            guard let file = try? FileDescriptor.open(rule.path, Int32(0o10000000) /* O_PATH */) else { continue }
            var info = stat()
            let isDirectory = fstat(file.raw, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
            // Rights about directory entries make sense beneath directories only.
            let fileRights: Access = [.execute, .writeFile, .truncate, .ioctlDevice]
            let access = Access(rawValue: rule.access.rawValue & handled.rawValue & (isDirectory ? ~0 : fileRights.rawValue))
            guard vx_landlock_allow_beneath(ruleset.raw, file.raw, access.rawValue) == 0 else {
                throw SystemError("landlock_add_rule \(rule.path)")
            }
            places.append(rule.path)
        }
        if abi >= 4 {
            for port in tcpListen.map(Array.init) ?? [] where vx_landlock_allow_port(ruleset.raw, port, 1) != 0 {
                throw SystemError("landlock_add_rule (TCP port \(port))")
            }
            for port in tcpConnect where vx_landlock_allow_port(ruleset.raw, port, 2) != 0 {
                throw SystemError("landlock_add_rule (TCP port \(port))")
            }
        }
        guard vx_set_no_new_privs() == 0, vx_landlock_restrict_self(ruleset.raw) == 0 else {
            throw SystemError("landlock_restrict_self")
        }
        return SandboxStatus(state: SandboxStatus.confined, landlockABI: abi, writablePaths: places, tcpConnectPorts: abi >= 4 ? tcpConnect : nil)
    }

    /// Checks the confinement took: opening vpnd's own /proc/self/comm for writing (always
    /// allowed to a process, on a file system no service manager makes read-only, outside
    /// every place above) must be refused. Nothing is written either way.
    public static func verify() -> Bool {
        do {
            try FileDescriptor.open("/proc/self/comm", O_WRONLY).close()
            return false
        } catch {
            return error.code == EACCES
        }
    }

    private static func createRuleset(_ attributes: inout vx_landlock_ruleset_attr, size: Int) throws(SystemError) -> FileDescriptor {
        try FileDescriptor("landlock_create_ruleset", returned: vx_landlock_create_ruleset(&attributes, size))
    }
}
