import Cgroups
import Netlink
import Routing

/// ContainerLookup on this machine: /proc, the cgroup hierarchy and rtnetlink.
public struct HostContainerLookup: ContainerLookup {
    private let netlink: Rtnetlink
    private let hierarchy: CgroupHierarchy
    private let open: (String) -> Int32?

    /// `open(path)`: a relay's namespace file's descriptor, or nil (RelayFinder.relays: a
    /// rootless user's /run/user/UID is mode 0700, which the caller opens with the override
    /// it may use).
    public init(netlink: Rtnetlink, hierarchy: CgroupHierarchy, open: @escaping (String) -> Int32?) {
        self.netlink = netlink
        self.hierarchy = hierarchy
        self.open = open
    }

    public func isAlive(_ pid: Int32) -> Bool { ContainerFinder.isAlive(pid) }
    public func cgroup(ofProcess pid: Int32) -> String? { CgroupHierarchy.cgroup(ofProcess: pid) }
    public func realUID(of pid: Int32) -> UInt32? { ProcessHandle.realUID(of: pid) }
    public func processes(in cgroup: String) -> [Int32] { hierarchy.processes(in: cgroup) }
    public func addresses(inNamespace id: Int32) -> [InterfaceAddress]? { try? netlink.addresses(inNamespace: id) }
    public func relays() -> [RelayFinder.Relay] { RelayFinder.relays(netlink: netlink, open: open) }
}
