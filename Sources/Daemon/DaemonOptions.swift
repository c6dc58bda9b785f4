/// How vpnd runs: where the policy, its socket and the profiles' cgroups are, and what it
/// confines or leaves out (vpnd's command line sets these).
public struct DaemonOptions: Sendable {
    public var policyDirectory: String
    public var socketPath: String
    /// Where profile cgroups live, relative to the cgroup2 root.
    public var cgroupParent: String
    public var dropPrivileges: Bool
    /// Confine vpnd's own file system writes, program execution and TCP (Landlock).
    public var sandbox: Bool
    /// The initial network namespace, whose process connector reports exec events (the
    /// kernel sends them there only); vpnd in another namespace opens it there.
    public var initialNetworkNamespace = "/proc/1/ns/net"
    /// Where built-in tunnels serve the `wg` tool's socket (IFACE.sock).
    public var wireguardSocketDirectory: String
    /// Where the last policy that applied is kept (`policy.d` inside), for the killswitch at
    /// boot (`vpnd --oneshot --policy-dir STATE/policy.d` before the network); nil: not kept.
    public var stateDirectory: String?
    /// Applies and exits (`--oneshot`, the killswitch at boot): exec rules, which only a
    /// serving vpnd enforces, need not be enforceable then.
    public var oneshot = false
    /// Where trusted-network rules read the host's DNS search domains.
    public var resolvConfPath = "/etc/resolv.conf"

    public init(policyDirectory: String, socketPath: String, cgroupParent: String = "vpn.slice", dropPrivileges: Bool = true,
                sandbox: Bool = true, wireguardSocketDirectory: String = "/var/run/wireguard") {
        self.sandbox = sandbox
        self.policyDirectory = policyDirectory
        self.socketPath = socketPath
        self.cgroupParent = cgroupParent
        self.dropPrivileges = dropPrivileges
        self.wireguardSocketDirectory = wireguardSocketDirectory
    }
}
