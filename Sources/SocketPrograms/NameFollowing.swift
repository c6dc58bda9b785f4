import BPF

/// Names follow the app: where a member's lookups go when they do not go to port 53.
/// - systemd-resolved's varlink socket (`resolvedSocket`, what nss-resolve connects to for
///   every getaddrinfo() under `hosts: resolve`): the connect is sent to the profile's
///   socket (the cgroup's `resolveSocket`), where vpnd answers through the profile's DNS
///   proxy; resolved itself, a non-member, would ask the host's resolver outside the tunnel.
/// - nscd's socket (both spellings glibc and others use): refused, so that glibc resolves by
///   itself, through port 53 and so the proxy; nscd would ask from outside the profile, and
///   its cache answers every user alike.
/// Only for sockets of vpnd's network namespace: a container of the profile with a mount
/// namespace of its own has its own resolver there, which its port-53 rules hold.
///
/// The original path is read from the kernel's copy of the address (`struct
/// bpf_sock_addr_kern`'s `uaddr`, through bpf_cast_to_kern_ctx and bpf_rdonly_cast as a
/// `struct sockaddr_un`, as the kernel's selftest connect_unix_prog does), and the new one
/// written with bpf_sock_addr_set_sun_path: kfuncs, Linux 6.7.
public enum NameFollowing {
    public static let resolvedSocket = "/run/systemd/resolve/io.systemd.Resolve"
    public static let nscdSockets = ["/var/run/nscd/socket", "/run/nscd/socket"]

    /// struct bpf_sock_addr_kern (include/linux/filter.h): sk, uaddr, tmp_reg, t_ctx, uaddrlen.
    enum KernelContext {
        static let address = 8, addressLength = 32
    }

    /// sun_path's offset in struct sockaddr_un (after sun_family).
    static let pathOffset = 2

    typealias Offset = SocketStorage.Offset
    typealias Flags = SocketStorage.Flags

    static func unixConnect(_ code: inout BPFAssembler, types: NameFollowingTypes) {
        code.load(.word, .r1, from: .r7, Offset.flags)
        code.and(.r1, Int32(Flags.followNames.rawValue))
        code.jump(if: .r1, .equal, 0, to: "allow")
        code.move(.r1, .r6)
        code.call(.getNetnsCookie)
        code.load(.doubleword, .r1, from: .r7, Offset.owner)
        code.jump(if: .r0, .notEqual, .r1, to: "allow")
        // r9 = the kernel's context, r8 = its copy of the address, r5 = its length.
        code.move(.r1, .r6)
        code.callKernelFunction(types.castToKernelContext)
        code.move(.r9, .r0)
        code.load(.doubleword, .r1, from: .r9, KernelContext.address)
        code.move(.r2, types.sockaddrUn)
        code.callKernelFunction(types.readOnlyCast)
        code.move(.r8, .r0)
        code.load(.word, .r5, from: .r9, KernelContext.addressLength)
        match(&code, resolvedSocket, to: "resolved", otherwise: "nscd0")
        for (index, path) in nscdSockets.enumerated() {
            code.label("nscd\(index)")
            match(&code, path, to: "refuse", otherwise: index + 1 < nscdSockets.count ? "nscd\(index + 1)" : "allow")
        }
        code.label("resolved")
        // A cgroup without a socket of its profile's (none given): left to resolved.
        code.load(.byte, .r1, from: .r7, Offset.resolveSocket)
        code.jump(if: .r1, .equal, 0, to: "allow")
        code.move(.r1, .r9)
        code.move(.r2, .r7)
        code.add(.r2, Int32(Offset.resolveSocket))
        code.move(.r3, Int32(SocketStorage.resolveSocketSize))
        code.callKernelFunction(types.setSunPath)
        code.jump(if: .r0, .notEqual, 0, to: "allow")
        SocketProgram.count(&code, Offset.namesRedirected)
        code.label("allow")
        code.exit(returning: 1)
        code.label("refuse")
        SocketProgram.count(&code, Offset.nscdRefused)
        code.exit(returning: 0)
    }

    /// Jumps to `target` when the address (r8, length r5) is `path`: its bytes, then the
    /// end of the address or a NUL (glibc passes the whole sockaddr_un, systemd the path
    /// and its NUL, Python the path alone).
    private static func match(_ code: inout BPFAssembler, _ path: String, to target: String, otherwise: String) {
        let bytes = Array(path.utf8)
        let length = UInt32(pathOffset + bytes.count)
        let compare = "\(target)-\(path)"
        code.jump(if: .r5, .less, length, to: otherwise)
        code.jump(if: .r5, .equal, length, to: compare)
        code.load(.byte, .r1, from: .r8, Int(length))
        code.jump(if: .r1, .notEqual, 0, to: otherwise)
        code.label(compare)
        for (index, byte) in bytes.enumerated() {
            code.load(.byte, .r1, from: .r8, pathOffset + index)
            code.jump(if: .r1, .notEqual, UInt32(byte), to: otherwise)
        }
        code.jump(to: target)
    }
}
