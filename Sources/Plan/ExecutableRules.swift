import Policy

/// Where a process goes when it execs a listed program (`route.executables`,
/// `bypass.executables`), decided from the program's path (/proc/PID/exe) and the cgroup
/// it is in. vpnd follows every exec (the kernel's process connector) and moves the
/// process right away; until it has, the process runs where it was started.
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
    }

    /// The bypass slice, beside the profiles' slices.
    public static func bypassCgroup(parent: String) -> String {
        (parent.isEmpty ? "" : parent + "/") + "vpn-\(Policy.bypassSliceName).slice"
    }

    /// nil when the process stays where it is. In system mode the system profile's members
    /// are also the processes in no profile's cgroup and not in the bypass slice.
    public static func decide(executable: String, cgroup: String, policy: Policy, parent: String) -> Decision? {
        func isIn(_ path: String) -> Bool { cgroup == path || cgroup.hasPrefix(path + "/") }
        if let target = policy.profiles.first(where: { $0.routeExecutables.contains(executable) }) {
            return isIn(target.cgroupPath(parent: parent)) ? nil : .join(profile: target.name)
        }
        // Every exec comes here: where the process is placed is looked at only for a listed program.
        var placed: Bool { policy.profiles.contains { isIn($0.cgroupPath(parent: parent)) } || isIn(bypassCgroup(parent: parent)) }
        for profile in policy.profiles where profile.bypassExecutables.contains(executable) {
            if isIn(profile.cgroupPath(parent: parent)) || (profile.name == policy.system.profile && !placed) {
                return .bypass(from: profile.name)
            }
        }
        return nil
    }
}
