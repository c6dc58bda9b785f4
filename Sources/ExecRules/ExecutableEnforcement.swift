import Cgroups
import Control
import Descriptors
import Plan
import Policy
import TrustedFiles
import ServiceSupport
import Applying
import DaemonLoop

/// bypass.executables and route.executables, enforced two ways at once:
/// - before the program runs, where the kernel has fanotify permission events: the listed
///   files are marked and each exec of one waits until vpnd has moved the process
///   (ExecutableMarks, ExecutableGuard);
/// - after the exec, from the process connector (ExecutableFollower): the only way where
///   fanotify is unavailable (the process runs where it was started until it is moved), and
///   the backstop where it is — it places processes that already ran a listed program when
///   vpnd starts or reloads, and execs the guard could not place in time.
/// Status says which is in force. Both judge a bypass by the same rule (ExecutableRules: only
/// whom may bypass is moved out) and report the launches it leaves in place to one
/// BypassRefusals, so a launch both see counts once.
///
/// The daemon's surface: opened at start (`init`), started on the loop (`start(on:)`: the
/// listed files' directories watched, the guard's threads), told each policy in force
/// (`follow`, `refresh`) and what each apply found (`applied(facts:)`), and asked for its
/// status. Exec events are watched by the daemon (`execEvents`), which hands them back with
/// the move's preparation (`handleExecEvents`): that goes through its reconciler.
public final class ExecutableEnforcement {
    private let follower: ExecutableFollower?
    private let followerUnavailable: (any Error)?
    private let group: FanotifyGroup?
    private let groupUnavailable: (any Error)?
    private var marks: ExecutableMarks?
    private var guardian: ExecutableGuard?
    /// bypass.executables launches left in their profile (their users may not bypass), by
    /// either way.
    private let refusals: BypassRefusals
    private let log: Log
    /// The policy and profile parent last followed or refreshed: what a change of the listed
    /// files' directories is looked at with, and what the guard's snapshot is made of.
    private var last: (policy: Policy, parent: String)?

    /// Opens both event sources: before vpnd drops its capabilities (the process connector
    /// in another network namespace and fanotify_init both need CAP_SYS_ADMIN). A vpnd that
    /// only applies and exits (`--oneshot`, vpnd-early.service, whose system call filter
    /// kills a process that calls fanotify_init) opens neither.
    public init(initialNetworkNamespace: String, open: Bool = true, log: Log) {
        self.log = log
        refusals = BypassRefusals()
        guard open else {
            follower = nil
            followerUnavailable = ApplyError.notOpenedByOneshot
            group = nil
            groupUnavailable = ApplyError.notOpenedByOneshot
            return
        }
        do {
            let reader = try ExecutableReader()
            try reader.check()
            follower = ExecutableFollower(events: try ExecutableFollower.openInInitialNamespace(initialNetworkNamespace),
                                          reader: reader, refusals: refusals, log: log)
            followerUnavailable = nil
        } catch {
            follower = nil
            followerUnavailable = error
        }
        do {
            group = try FanotifyGroup()
            groupUnavailable = nil
        } catch {
            group = nil
            groupUnavailable = error
        }
    }

    /// A policy that lists executables needs one of the two; without either it would look
    /// stricter than what is enforced, so it is refused.
    public func checkEnforceable(_ policy: Policy) throws {
        guard policy.listsExecutables, group == nil, let reason = followerUnavailable else { return }
        throw ApplyError.executablesUnenforceable(fanotify: groupUnavailable, execEvents: reason)
    }

    /// Starts the guard's threads and watches the listed files' directories (a change there
    /// looks at the files again with the policy last followed). After vpnd blocked its
    /// signals, dropped its capabilities and applied its sandbox.
    public func start(on loop: EventLoop, hierarchy: CgroupHierarchy) throws {
        let marks = try ExecutableMarks(group: group, log: log)
        self.marks = marks
        loop.watch(marks.watchDescriptor) { [weak self] _ in
            if marks.drain(), let self, let last { refresh(last.policy, parent: last.parent) }
        }
        if let group {
            let guardian = try ExecutableGuard(group: group, hierarchy: hierarchy, refusals: refusals, log: log)
            guardian.start()
            self.guardian = guardian
            if let reason = followerUnavailable {
                log.warning("exec rules: listed programs are placed before they run (fanotify), without exec events as a backstop (\(reason)): processes already running a listed program are not placed")
            } else {
                log.info("exec rules: listed programs are placed before they run (fanotify), exec events as a backstop")
            }
        } else {
            log.notice("exec rules: fanotify permission events unavailable (\(groupUnavailable.map { "\($0)" } ?? "?")); listed programs are moved after their exec (exec events)")
        }
    }

    /// The cgroups held for lack of their socket programs (as of the last apply): the
    /// guard places nobody there.
    private var held: Set<String> = []

    /// After an apply: the cgroups it holds are handed to the guard at once.
    public func applied(facts: RuntimeFacts) {
        let held = Set(facts.unguardedCgroups.keys)
        guard held != self.held else { return }
        self.held = held
        if let marks, let last {
            guardian?.publish(ExecutableGuard.Snapshot(policy: last.policy, parent: last.parent, names: marks.names, held: held))
        }
    }

    /// Looks at the listed files again (the policy changed, a directory changed, the check
    /// each second) and hands what they name to the guard.
    public func refresh(_ policy: Policy, parent: String) {
        last = (policy, parent)
        guard let marks else { return }
        marks.refresh(policy)
        guardian?.publish(ExecutableGuard.Snapshot(policy: policy, parent: parent, names: marks.names, held: held))
    }

    /// A policy now in force: the files' problems logged with their file:line (and bypass
    /// lists only root's launches can take), the files marked, exec events followed, and
    /// processes already running a listed program placed.
    public func follow(_ policy: Policy, parent: String, hierarchy: CgroupHierarchy, prepare: (String) throws -> Void) {
        for diagnostic in ExecutableFiles.diagnose(policy, inspector: SystemExecutableInspector()) {
            log.warning("\(diagnostic)")
        }
        for warning in policy.bypassExecutablesWarnings { log.warning(warning) }
        refresh(policy, parent: parent)
        guard let follower else { return }
        follower.follow(policy)
        follower.scanAll(policy: policy, parent: parent, hierarchy: hierarchy, names: names(ofFileAt:), prepare: prepare)
    }

    /// The process connector's socket, for the daemon to watch (nil: no exec events).
    public var execEvents: DescriptorNumber? { follower?.events.fileDescriptor }

    /// The inspector of which program a process runs (nil without exec events).
    public var reader: ExecutableReader? { follower?.reader }

    public func handleExecEvents(_ policy: Policy, parent: String, hierarchy: CgroupHierarchy, prepare: (String) throws -> Void) {
        follower?.handleEvents(policy: policy, parent: parent, hierarchy: hierarchy, names: names(ofFileAt:), prepare: prepare)
    }

    private func names(ofFileAt path: String) -> [String] { marks?.names(ofFileAt: path) ?? [] }

    /// Processes moved into a profile ("work") or the bypass slice ("bypass"), either way.
    public func moves(_ label: String) -> Int {
        (follower?.moves[label] ?? 0) + (guardian?.counters.moves[label] ?? 0)
    }

    /// Processes that ran a bypass.executables program and stayed in their profile because
    /// their users may not bypass.
    public var bypassRefused: Int { refusals.count }

    public func status(_ policy: Policy) -> ExecutableRulesStatus? {
        guard policy.listsExecutables else { return nil }
        let counters = guardian?.counters ?? ExecutableGuard.Counters()
        var status = ExecutableRulesStatus(
            enforcement: guardian != nil ? ExecutableRulesStatus.beforeExec : follower != nil ? ExecutableRulesStatus.afterExec : "none",
            answerDeadlineMilliseconds: Int(ExecutableGuard.answerDeadline.nanoseconds / 1_000_000))
        status.fanotifyUnavailable = group == nil ? groupUnavailable.map { "\($0)" } : nil
        status.execEventsUnavailable = followerUnavailable.map { "\($0)" }
        status.refusedAtDeadline = counters.refusedLate
        status.allowedAtDeadline = counters.allowedLate
        status.unplaced = counters.unplaced
        status.files = (marks?.files ?? []).map { file in
            var shown = ListedExecutableStatus(path: file.path, target: file.target, marked: file.marked)
            shown.script = file.script
            shown.problem = file.problem
            shown.inode = file.identity?.inode
            shown.device = file.identity?.device
            return shown
        }
        return status
    }
}
