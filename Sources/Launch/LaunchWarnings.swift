/// The lines vpnexec prints on stderr before it execs, when the launch will not do what it
/// seems to: one line each, with what to do. Only warnings: the command runs all the same.
public enum LaunchWarnings {
    /// A program that hands launches over (SingleInstanceProgram) runs for the user outside
    /// the profile: the new window would be the running instance's.
    public static func alreadyRunning(_ name: String, pid: Int32, profile: String, separateInstance: String) -> String {
        "vpnexec: warning: \(name) already runs for you outside profile \(profile) (pid \(pid)): this launch may just open a window in it, outside the profile; "
            + "start a separate instance (vpnexec -p \(profile) -- \(separateInstance)), quit the running one first, "
            + "or have the policy put it in the profile wherever it starts (route.executables, apps)\n"
    }

    /// The profile's killswitch holds its members because the tunnel is not there.
    public static func heldTunnel(_ tunnel: HeldTunnel, profile: String, command: String) -> String {
        let program = SingleInstanceProgram.fileName(command)
        let what = switch tunnel.state {
        case HeldTunnel.missing: "is missing: until it is there, \(program)'s connections fail (\"No route to host\")"
        case HeldTunnel.down: "is down: until it is up, \(program)'s connections fail (\"No route to host\") or time out"
        case HeldTunnel.heldDown: "is held down (vpnctl down \(profile)): until `vpnctl up \(profile)`, \(program)'s connections time out"
        case HeldTunnel.blocked: "is blocked on this network (a trusted-network rule; `vpnctl status` says which): until the host is on another, \(program)'s connections fail or time out"
        default: "is \(tunnel.state): \(program)'s connections get nothing through it"
        }
        return "vpnexec: warning: profile \(profile)'s tunnel \(tunnel.interface) \(what); nothing leaves outside the tunnel\n"
    }
}
