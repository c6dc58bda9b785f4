import Cgroups
import Plan
import Policy

/// A transient scope asked of systemd; `done` gets nil once it runs, or why it does not.
protocol ScopeStarting: AnyObject {
    func start(unit: String, slice: String, pid: Int32, description: String, done: @escaping (String?) -> Void)
}

extension SystemdScopes: ScopeStarting {}

extension Reconciler {
    /// The profile's cgroup and those that joined it where they stand (a user's
    /// vpn-NAME.slice, a listed desktop app's scope), as last applied.
    func memberCgroups(of profile: Profile, parent: String) -> [String] {
        [profile.cgroupPath(parent: parent)]
            + (appliedFacts?.joinedCgroups ?? [:]).filter { $0.value.profile == profile.name }.keys.sorted()
    }

    /// Before a move: every cgroup vpnd keeps exists and its id is in the applied maps. A
    /// cgroup systemd or an admin removed (and maybe made again, with a new id) is brought
    /// back and its id applied (the reconciler's prepare hook makes the cgroups).
    func prepareMove(cgroups: any CgroupMoving, parent: String) throws {
        let paths = Planner.cgroups(policy, parent: parent)
        if paths.contains(where: { cgroups.id(of: $0) == nil || cgroups.id(of: $0) != appliedFacts?.cgroupIDs[$0] }) {
            try applyPolicy()
        }
    }

    /// Before a process goes into `path`: refused while it, or a cgroup of ours above it,
    /// lacks its socket programs (as the kernel said at the last apply, each second): a
    /// process placed there would be a member without its profile's mark, held by the
    /// table with no way out but loopback, while the caller believes it tunneled.
    func checkGuarded(_ path: String) throws {
        let unguarded = applier.unguardedCgroups
        // The nearest: the profile's own cgroup before the parent above it.
        guard let (cgroup, state) = unguarded.filter({ !$0.key.isEmpty && UnguardedRules.holds(path, in: [$0.key]) }).max(by: { $0.key.count < $1.key.count }) else { return }
        let profile = policy.profiles.first { UnguardedRules.holds(path, in: [$0.cgroupPath(parent: appliedFacts?.cgroupParent ?? "")]) }
        throw RequestFailure((profile.map { "profile \($0.name) is held" } ?? "\(path) is held")
            + ": the kernel does not have its socket programs on \(cgroup) (\(state.missing.map(\.name).joined(separator: ", "))): \(state.reason). "
            + "A process there would leave without the profile's mark, so none is placed there and what is there is held (only loopback); "
            + "a program attached to that cgroup or one above it without BPF_F_ALLOW_MULTI (`bpftool cgroup tree`) keeps vpnd's out")
    }
}
