import CLinux
import Cgroups
import Descriptors
import Glibc
import Testing

/// Why the pidfd a client sent is not its own, in the words after "the pidfd sent with the
/// request" in a refusal.
@Suite struct PidfdMismatchTests {
    @Test func eachCaseSaysWhatThePidfdNames() {
        let cases: [(PidfdMismatch, String)] = [
            (.notAPidfd, "is not a pidfd"),
            (.exited, "names a process that has exited"),
            (.otherPid(812, connecting: 4242), "names pid 812, not the connecting pid 4242"),
            (.notDuplicated(SystemError("duplicate", code: EMFILE)), "cannot be duplicated: Too many open files"),
            (.otherUID(pid: 4242, uid: 0, connecting: 1000), "names pid 4242 of uid 0, not the connecting uid 1000"),
            (.otherUID(pid: 4242, uid: nil, connecting: 1000), "names pid 4242 of uid ?, not the connecting uid 1000"),
        ]
        for (mismatch, words) in cases { #expect(mismatch.description == words) }
    }

    /// A descriptor that is no pidfd (/dev/null: its fdinfo has no Pid: line), and
    /// our own pidfd claimed for another pid.
    @Test func aDescriptorIsTakenOnlyForTheProcessItNames() throws {
        let null = try FileDescriptor.open("/dev/null", O_RDONLY)
        guard case .failure(.notAPidfd) = ProcessHandle.verify(pidfd: DescriptorNumber(borrowing: null.raw), pid: getpid(), uid: getuid()) else {
            Issue.record("/dev/null taken as a pidfd")
            return
        }
        let own = try FileDescriptor("pidfd_open", returned: vx_pidfd_open(getpid()))
        guard case .failure(.otherPid(getpid(), connecting: 1)) = ProcessHandle.verify(pidfd: DescriptorNumber(borrowing: own.raw), pid: 1, uid: getuid()) else {
            Issue.record("our pidfd taken for pid 1")
            return
        }
        guard case .success = ProcessHandle.verify(pidfd: DescriptorNumber(borrowing: own.raw), pid: getpid(), uid: getuid()) else {
            Issue.record("our own pidfd refused")
            return
        }
    }
}
