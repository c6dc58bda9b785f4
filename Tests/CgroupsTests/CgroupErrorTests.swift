import Cgroups
import Descriptors
import Glibc
import Testing

/// A cgroup or process that could not be had, in the words vpnd logs and a refused move
/// answers, and the errno a caller tells a refusal by.
@Suite struct CgroupErrorTests {
    @Test func eachCaseSaysWhatFailed() {
        let cases: [(CgroupError, String, Int32)] = [
            (.system(SystemError("create cgroup /sys/fs/cgroup/vpn.slice", code: EACCES)), "create cgroup /sys/fs/cgroup/vpn.slice: Permission denied", EACCES),
            (.noProcess(pid: 4242), "no process 4242", 0),
            (.cannotOpenProcess(pid: 4242, SystemError("open process 4242", code: EMFILE)), "cannot open process 4242: Too many open files", 0),
            (.processExited(pid: 4242), "process 4242 exited", 0),
            (.mountInfoUnreadable, "cannot read /proc/self/mountinfo", 0),
            (.noCgroup2, "no cgroup2 file system is mounted (looked in /proc/self/mountinfo); vpnexec needs the unified cgroup hierarchy", 0),
        ]
        for (error, words, code) in cases {
            #expect(error.description == words)
            #expect(error.code == code, "\(error)")
        }
    }

    /// pidfd_open's ESRCH is "no process", not an errno's words.
    @Test func aPidNobodyHasIsNoProcess() throws {
        var pid: Int32 = 4_000_000
        while kill(pid, 0) == 0 || errno != ESRCH { pid -= 1 }
        #expect { try ProcessHandle.open(pid: pid) } throws: {
            guard case let .noProcess(missing) = $0 as? CgroupError else { return false }
            return missing == pid
        }
    }
}
