import Policy

/// Where a process goes when it execs a listed program (`route.executables`,
/// `bypass.executables`), decided from the names the program has in the policy, the
/// cgroup the process is in and, for a bypass, who runs it (root and whom `[system] bypass`
/// names; anyone else's launch stays where it is). Where the kernel has fanotify permission events, vpnd marks the
/// listed files and moves the process while its exec waits, before the program's first
/// instruction (ExecutableGuard: the names are the listed paths of the file that fired);
/// elsewhere it follows execs after the fact (the process connector; the name is
/// /proc/PID/exe and the listed paths of that file), and the process runs where it was
/// started until it is moved.
extension Policy {
    /// Whether processes may be placed in the bypass slice (vpnd then makes it): listed
    /// programs, `vpnexec --bypass`, and system mode (where it is the one way out).
    public var usesBypassSlice: Bool {
        system.profile != nil || system.bypass != nil || profiles.contains { !$0.bypassExecutables.isEmpty }
    }
}

public enum ExecutableRules {
    public enum Decision: Equatable, Sendable {
        /// Into this profile's cgroup.
        case join(profile: String)
        /// Out of its profile, into the bypass slice.
        case bypass(from: String)
        /// A bypass its user may not take (Policy.bypassRefusal): the process stays in
        /// profile `from`, where it was, and its exec runs there. `program`: the listed path
        /// that matched (the profile's first, in its order, whichever name started it);
        /// `rule`: which rule refused. Both for the log.
        case bypassRefused(from: String, program: String, rule: String)
    }

    /// The bypass slice, beside the profiles' slices.
    public static func bypassCgroup(parent: String) -> String {
        (parent.isEmpty ? "" : parent + "/") + "vpn-\(Policy.bypassSliceName).slice"
    }

    /// nil when the process stays where it is. In system mode the system profile's members
    /// are also the processes in no profile's cgroup and not in the bypass slice.
    public static func decide(executable: String, cgroup: String, policy: Policy, parent: String, user: () -> Credentials?) -> Decision? {
        decide(executables: [executable], cgroup: cgroup, policy: policy, parent: parent, user: user)
    }

    /// The same for a program that goes by several listed names (hard links, a symbolic link
    /// and its target): a route rule of any of them first, as for one name.
    ///
    /// A bypass is granted only to whom may bypass at all (`vpnexec --bypass`: root and
    /// `[system] bypass`): whoever runs a bypassed program can make it run any code (its
    /// environment: LD_PRELOAD, BASH_ENV for a launcher script), so moving anyone else's
    /// exec out would be a way out of the tunnel for anyone who may start the program.
    /// `user`: the exec'ing process's real uid and groups, asked only for a bypass (every exec
    /// on the machine comes here from exec events); nil (it could not be read: the process
    /// is gone) refuses.
    public static func decide(executables: [String], cgroup: String, policy: Policy, parent: String, user: () -> Credentials?) -> Decision? {
        func isIn(_ path: String) -> Bool { cgroup == path || cgroup.hasPrefix(path + "/") }
        if let target = policy.profiles.first(where: { $0.routeExecutables.contains(where: executables.contains) }) {
            return isIn(target.cgroupPath(parent: parent)) ? nil : .join(profile: target.name)
        }
        // Every exec comes here: where the process is placed is looked at only for a listed program.
        var placed: Bool { policy.profiles.contains { isIn($0.cgroupPath(parent: parent)) } || isIn(bypassCgroup(parent: parent)) }
        for profile in policy.profiles {
            guard let program = profile.bypassExecutables.first(where: executables.contains) else { continue }
            if isIn(profile.cgroupPath(parent: parent)) || (profile.name == policy.system.profile && !placed) {
                guard let who = user() else { return .bypassRefused(from: profile.name, program: program, rule: "its user and groups could not be read") }
                return policy.bypassRefusal(who).map { .bypassRefused(from: profile.name, program: program, rule: $0) } ?? .bypass(from: profile.name)
            }
        }
        return nil
    }

    /// How an exec of a listed program is answered when vpnd has not placed the process in
    /// time (ExecutableGuard's deadline), or could not: a `route.executables` program is
    /// refused (the exec fails with EPERM) rather than run outside its tunnel; a
    /// `bypass.executables` program is allowed where it was started, inside its profile: the
    /// tunnel is the safe side of a bypass (exec events move it out afterwards).
    public enum LateAnswer: Equatable, Sendable {
        case refuse, allow
    }

    public static func lateAnswer(executables: [String], policy: Policy) -> LateAnswer {
        policy.profiles.contains { $0.routeExecutables.contains(where: executables.contains) } ? .refuse : .allow
    }
}
