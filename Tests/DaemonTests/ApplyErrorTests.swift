import Applying
import Descriptors
import Glibc
import Testing

/// What vpnd says when its start or the kernel edge fails: the words people (and the
/// integration tests, in vpnd's stderr) read, made from the values the error keeps.
@Suite struct ApplyErrorTests {
    @Test func eachCaseSaysWhatFailedInTheWordsVpndPrints() {
        let cases: [(ApplyError, String)] = [
            (.noTableApplied, "no table applied yet"),
            (.cgroupParentIsRoot, "the cgroup parent must be a cgroup below the root (e.g. vpn.slice), not the root itself"),
            (.socketProgramsNotLoaded(underlying: SystemError("bpf: creating the cgroup storage of the socket programs", code: EPERM)),
             "the cgroup socket programs (a member's mark, guard and DNS at its sockets) could not be loaded: "
                + "bpf: creating the cgroup storage of the socket programs: Operation not permitted; "
                + "vpnexec needs Linux 5.14 or later with cgroup BPF, and CAP_BPF at start"),
            (.namespaceHeld(pid: "4242", lock: "/run/vpnexec/netns-4026531840.lock"),
             "another vpnd (pid 4242) manages this network namespace (lock /run/vpnexec/netns-4026531840.lock)"),
            (.namespaceHeld(pid: nil, lock: "/run/vpnexec/netns-1.lock"), "another vpnd manages this network namespace (lock /run/vpnexec/netns-1.lock)"),
            (.controlSocketHeld(path: "/run/vpnexec/vpnd.sock"), "another vpnd already listens on /run/vpnexec/vpnd.sock"),
            (.kernelLacks(operation: "fanotify_init", feature: "fanotify permission events (CONFIG_FANOTIFY_ACCESS_PERMISSIONS)"),
             "fanotify_init: this kernel has no fanotify permission events (CONFIG_FANOTIFY_ACCESS_PERMISSIONS)"),
            (.kernelLacks(operation: "fanotify_init", feature: "fanotify"), "fanotify_init: this kernel has no fanotify"),
            (.notPermitted(operation: "fanotify_init", needs: "CAP_SYS_ADMIN at start, or a system call filter"),
             "fanotify_init: not permitted (CAP_SYS_ADMIN at start, or a system call filter)"),
            (.capabilityNotKept(process: "the helper that reads /proc/PID/exe", capability: "CAP_SYS_PTRACE"),
             "the helper that reads /proc/PID/exe could not keep CAP_SYS_PTRACE (not in vpnd's capability bound)"),
            (.system(SystemError("setns", code: EPERM), doing: "cannot enter the initial network namespace for exec events"),
             "cannot enter the initial network namespace for exec events: Operation not permitted"),
            (.system(SystemError("inotify_init1", code: EMFILE), doing: "inotify_init1 (for listed executables)"),
             "inotify_init1 (for listed executables): Too many open files"),
            (.notOpenedByOneshot, "not opened by vpnd --oneshot"),
        ]
        for (error, words) in cases { #expect(error.description == words) }
    }

    /// The refusal of a policy that lists executables names both sources' reasons, each
    /// kept as the error it was until here.
    @Test func anUnenforceablePolicySaysWhyNeitherSourceIsOpen() {
        let fanotify = ApplyError.notPermitted(operation: "fanotify_init", needs: "CAP_SYS_ADMIN at start, or a system call filter")
        let execEvents = ApplyError.capabilityNotKept(process: "the helper that reads /proc/PID/exe", capability: "CAP_SYS_PTRACE")
        #expect(ApplyError.executablesUnenforceable(fanotify: fanotify, execEvents: execEvents).description
            == "bypass.executables and route.executables need fanotify permission events or exec events, and this vpnd has neither "
            + "(fanotify_init: not permitted (CAP_SYS_ADMIN at start, or a system call filter); "
            + "the helper that reads /proc/PID/exe could not keep CAP_SYS_PTRACE (not in vpnd's capability bound))")
        #expect(ApplyError.executablesUnenforceable(fanotify: nil, execEvents: execEvents).description.hasSuffix("neither (?; "
            + "the helper that reads /proc/PID/exe could not keep CAP_SYS_PTRACE (not in vpnd's capability bound))"))
    }

    /// What failed stays a value a caller can look into: the errno of the system call.
    @Test func theSystemErrorIsKeptNotOnlyItsWords() throws {
        let error: any Error = ApplyError.system(SystemError("setns", code: EINVAL), doing: "cannot enter the initial network namespace for exec events")
        guard case let .system(underlying, _) = error as? ApplyError else {
            Issue.record("not the system case: \(error)")
            return
        }
        #expect(underlying == SystemError("setns", code: EINVAL))
    }
}
