import Cgroups
import Plan
import Policy

/// Where a process that executes a listed program goes (`route.executables`,
/// `bypass.executables`): ExecutableRules' decision as the cgroup to place it in and the
/// name its move is counted under. Both ways of following execs use it: the guard before
/// the program runs (ExecutableGuard) and exec events after (ExecutableFollower).
public struct ExecPlacement: Equatable, Sendable {
    /// The cgroup the process goes into: its profile's, or the bypass slice.
    public var target: String
    /// The profile's name, or "bypass" (status counts moves by it).
    public var label: String

    /// nil: the process stays where it is. `names`: the program's listed names (its path,
    /// hard links, listed symbolic links to it); `cgroup`: where the process is now; `user`:
    /// who runs it (asked for a bypass only).
    public static func of(names: [String], cgroup: String, policy: Policy, parent: String, user: () -> Credentials?) -> ExecPlacement? {
        ExecutableRules.decide(executables: names, cgroup: cgroup, policy: policy, parent: parent, user: user)
            .flatMap { ExecPlacement($0, policy: policy, parent: parent) }
    }

    /// Where `decision` (made from `policy`) sends the process; nil for a bypass its user
    /// may not take (it stays where it is).
    public init?(_ decision: ExecutableRules.Decision, policy: Policy, parent: String) {
        switch decision {
        case let .join(profile):
            target = policy.profile(named: profile)!.cgroupPath(parent: parent)
            label = profile
        case .bypass:
            target = ExecutableRules.bypassCgroup(parent: parent)
            label = Policy.bypassSliceName
        case .bypassRefused:
            return nil
        }
    }

    public init(target: String, label: String) {
        self.target = target
        self.label = label
    }

    /// After the exec: the kernel's maps know the target's id first (`prepare`: the
    /// reconciler makes the cgroup and applies its id if it is new, and refuses a target
    /// held for lack of its socket programs), then the process moves (into a leaf below
    /// where the cgroup takes no processes). Returns where it went.
    public func apply(to process: ProcessHandle, cgroups: any CgroupMoving, prepare: (String) throws -> Void) throws -> String {
        try prepare(target)
        return try cgroups.place(process, in: target)
    }
}
