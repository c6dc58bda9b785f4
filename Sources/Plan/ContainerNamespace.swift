/// A member's network namespace other than vpnd's, as vpnd found it (Containers): whose it
/// is, and whether it is routed into the profile's tunnel, relayed by a process in userspace,
/// or held at its cgroup.
public struct ContainerNamespace: Hashable, Sendable {
    /// The namespace's cookie (what the socket programs see).
    public var cookie: UInt64
    /// The profile of the cgroup its process is in.
    public var profile: String
    public var state: State
    /// Its id in vpnd's network namespace (nil: it has none): `ip netns list-id`, a host
    /// end's `link-netnsid`.
    public var namespace: Int32?
    /// The bridge each routed host end is a port of, by the end's name (none: a veth of its
    /// own, routed by its name; a port: marked by the bridge's rules, routed by the mark).
    public var bridges: [String: String] = [:]
    /// The cgroup of the last process that made a socket there, when vpnd last saw it live
    /// (what names a runtime's container: ContainerName).
    public var cgroup: String?

    public enum State: Hashable, Sendable {
        /// It reaches the host by these veths (their host ends' names) alone, each one of its
        /// own or a bridge's port: routed.
        case routed(interfaces: [String])
        /// Its interfaces but loopback are TUN/TAP devices alone (their names in it), read by
        /// a process in userspace (rootless podman's slirp4netns or pasta) that sends what it
        /// reads with sockets of its own: let out, with no rule of ours. Those sockets are a
        /// member's, marked and held by the killswitch, when the relay runs in the profile.
        case relayed(interfaces: [String])
        /// Held at its cgroup's egress, and why (for status).
        case held(why: String)
    }

    public init(cookie: UInt64, profile: String, state: State, bridges: [String: String] = [:], namespace: Int32? = nil, cgroup: String? = nil) {
        self.cookie = cookie
        self.profile = profile
        self.state = state
        self.bridges = bridges
        self.namespace = namespace
        self.cgroup = cgroup
    }
}
