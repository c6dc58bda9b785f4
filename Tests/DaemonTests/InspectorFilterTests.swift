import CLinux
import Facts
import Glibc
import Testing

/// The process inspector's seccomp filter (CLinux/inspector.h): what vpnd's helper with
/// CAP_SYS_PTRACE may still do once confined, tried in a forked child each.
@Suite struct InspectorFilterTests {
    /// Runs `body` in a child confined by the filter (talking over `sock`); returns how it
    /// ended: ("exit", code) or ("signal", number).
    func confined(_ body: @escaping (Int32) -> Void) -> (String, Int32) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { return ("socketpair", errno) }
        defer { close(ends[0]); close(ends[1]) }
        let sock = ends[1]
        let child = fork()
        if child == 0 {
            guard vx_set_no_new_privs() == 0, vx_seccomp_inspector(sock) == 0 else { _exit(3) }
            body(sock)
            _exit(0)
        }
        var status: Int32 = 0
        waitpid(child, &status, 0)
        let signal = status & 0x7f
        return signal == 0 ? ("exit", (status >> 8) & 0xff) : ("signal", signal)
    }

    @Test func whatItNeedsIsAllowed() {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 1 << 16)
        defer { buffer.deallocate() }
        #expect(confined { _ in _ = vx_tun_holders(buffer, 1 << 16) } == ("exit", 0), "a scan of every process")
        #expect(confined { sock in var x: Int32 = 1; _ = write(sock, &x, 4) } == ("exit", 0))
        #expect(confined { _ in _exit(open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC) >= 0 ? 0 : 9) } == ("exit", 0), "a directory, read-only")
    }

    @Test func everythingElseKillsIt() {
        let killed = ("signal", SIGSYS)
        #expect(confined { _ in _ = open("/etc/hostname", O_RDONLY) } == killed, "no file's contents")
        #expect(confined { _ in _ = open("/proc/self/mem", O_RDONLY) } == killed)
        #expect(confined { _ in _ = open("/tmp", O_RDWR | O_DIRECTORY) } == killed, "directories read-only")
        #expect(confined { _ in _ = open("/tmp", O_DIRECTORY | O_RDONLY | 0o20000000 /* O_TMPFILE */) } == killed)
        #expect(confined { _ in var x: Int32 = 0; _ = read(0, &x, 4) } == killed, "read on vpnd's socket only")
        #expect(confined { sock in _ = close(sock) } == killed, "the socket's number is never freed for another file")
        #expect(confined { sock in var n: Int32 = 0; _ = ioctl(sock, UInt(FIONREAD), &n) } == killed, "TUNGETIFF is the only ioctl")
        #expect(confined { _ in _ = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0) } == killed)
        #expect(confined { _ in _ = unlink("/tmp/vx-inspector-never") } == killed)
    }

    @Test func holderLinesParse() {
        #expect(TunnelHolder.parse("12 wg0 77 78\n13 tun0\nbad line\n14 tun1 x\n") == [
            TunnelHolder(pid: 12, interface: "wg0", socketInodes: [77, 78]),
            TunnelHolder(pid: 13, interface: "tun0", socketInodes: []),
        ])
    }
}
