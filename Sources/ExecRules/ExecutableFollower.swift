import CLinux
import Cgroups
import Descriptors
import Facts
import Glibc
import Netlink
import Plan
import Policy
import ServiceSupport
import Applying

/// bypass.executables and route.executables after the fact: vpnd follows every exec (the
/// kernel's process connector) and moves a process that ran a listed program at once,
/// through a pidfd (a pid reused meanwhile is never moved). Where fanotify permission events
/// are in force (ExecutableGuard) the process is in place before its exec completes and this
/// is the backstop: processes already running a listed program when vpnd starts or reloads,
/// and execs the guard could not place in time. Without them it is the only way, and the
/// process runs where it was started from its exec until the move; connections it opens
/// meanwhile keep the route they got. At start, on reload and when the kernel dropped
/// events (a burst overflowed the socket), every running process is looked at. A program is
/// matched by its path (/proc/PID/exe) and the listed paths of the file there (hard links,
/// listed symbolic links); a script's process names its interpreter, so listed scripts are
/// matched only by the guard.
final class ExecutableFollower {
    let events: ExecEvents
    /// Also asked which processes hold tunnel devices (TunnelHolderCache).
    let reader: ExecutableReader
    private let refusals: BypassRefusals
    private let log: Log
    private var listening = true
    /// Moves made, by target ("work", or "bypass"), for status.
    private(set) var moves: [String: Int] = [:]

    init(events: ExecEvents, reader: ExecutableReader, refusals: BypassRefusals, log: Log) {
        self.events = events
        self.reader = reader
        self.refusals = refusals
        self.log = log
    }

    /// The proc connector delivers only to sockets in the initial network namespace: a vpnd
    /// in another one (a test's, a network-namespaced service) opens it there, which needs
    /// CAP_SYS_ADMIN, so this runs before vpnd drops its capabilities.
    static func openInInitialNamespace(_ path: String) throws -> ExecEvents {
        let initial = try openNamespace(path)
        guard let own = try? FileDescriptor.open("/proc/thread-self/ns/net", O_RDONLY) else { return try ExecEvents() }
        var ownInfo = stat(), initialInfo = stat()
        guard fstat(own.raw, &ownInfo) == 0, fstat(initial.raw, &initialInfo) == 0,
              ownInfo.st_ino != initialInfo.st_ino || ownInfo.st_dev != initialInfo.st_dev else {
            return try ExecEvents()
        }
        guard vx_setns(initial.raw, vx_clone_newnet()) == 0 else {
            throw ApplyError.system(SystemError("setns"), doing: "cannot enter the initial network namespace for exec events")
        }
        defer { precondition(vx_setns(own.raw, vx_clone_newnet()) == 0, "could not return to vpnd's network namespace") }
        return try ExecEvents()
    }

    private static func openNamespace(_ path: String) throws(ApplyError) -> FileDescriptor {
        do { return try FileDescriptor.open(path, O_RDONLY) } catch {
            throw ApplyError.system(error, doing: "cannot open the initial network namespace (\(path)) for exec events")
        }
    }

    /// Subscribed only while the policy lists executables.
    func follow(_ policy: Policy) {
        guard policy.listsExecutables != listening else { return }
        do {
            try events.listen(policy.listsExecutables)
            listening = policy.listsExecutables
        } catch {
            log.error("exec events: \(error)")
        }
    }

    /// `names`: the listed paths of the file at a path (ExecutableMarks).
    func handleEvents(policy: Policy, parent: String, hierarchy: CgroupHierarchy, names: (String) -> [String], prepare: (String) throws -> Void) {
        let (pids, lost) = events.drain()
        guard policy.listsExecutables else { return }
        if lost {
            log.warning("exec events were lost (a burst overflowed the socket); looking at every process")
            scanAll(policy: policy, parent: parent, hierarchy: hierarchy, names: names, prepare: prepare)
            return
        }
        for pid in pids { place(pid, policy: policy, parent: parent, hierarchy: hierarchy, names: names, prepare: prepare) }
    }

    func scanAll(policy: Policy, parent: String, hierarchy: CgroupHierarchy, names: (String) -> [String], prepare: (String) throws -> Void) {
        guard policy.listsExecutables else { return }
        let pids = Directory.names(of: "/proc").compactMap(Int32.init).filter { $0 > 1 }
        for pid in pids { place(pid, policy: policy, parent: parent, hierarchy: hierarchy, names: names, prepare: prepare) }
    }

    /// Looks at one process: held by a pidfd first, so what is read about it (its program,
    /// its cgroup, its user) is its own if it is still alive afterwards (the move checks).
    /// The user is judged by its real uid and groups, as the guard judges them before the
    /// exec: a set-user-ID program's effective uid is its owner's, not who started it.
    private func place(_ pid: Int32, policy: Policy, parent: String, hierarchy: CgroupHierarchy, names: (String) -> [String], prepare: (String) throws -> Void) {
        var user: Credentials?
        guard let process = try? ProcessHandle.open(pid: pid), let executable = reader.executable(of: pid),
              let cgroup = CgroupHierarchy.cgroup(ofProcess: pid), process.isAlive,
              let decision = ExecutableRules.decide(executables: [executable] + names(executable), cgroup: cgroup, policy: policy, parent: parent,
                                                    user: { user = ProcessDetails.credentials(of: pid); return user }) else { return }
        guard let placement = ExecPlacement(decision, policy: policy, parent: parent) else {
            if case let .bypassRefused(profile, program, rule) = decision, process.isAlive,
               let said = refusals.record(pid: pid, user: user, profile: profile, program: program, rule: rule) {
                log.notice(said)
            }
            return
        }
        do {
            let placed = try placement.apply(to: process, cgroups: hierarchy, prepare: prepare)
            moves[placement.label, default: 0] += 1
            log.info("pid \(pid) ran \(executable): moved from \(cgroup.isEmpty ? "the root cgroup" : cgroup) into \(placed)")
        } catch {
            log.warning("pid \(pid) ran \(executable) but could not be moved into \(placement.target): \(error)")
        }
    }
}
