import Routing

/// What status asks the host about members' namespaces and the processes seen in them
/// (ContainerStatus): HostContainerLookup on this machine, values a test sets.
public protocol ContainerLookup {
    /// Whether process `pid` lives (a namespace's last process is often gone: a lookup's).
    func isAlive(_ pid: Int32) -> Bool
    /// The cgroup process `pid` is in, relative to the hierarchy's root.
    func cgroup(ofProcess pid: Int32) -> String?
    /// Its real uid.
    func realUID(of pid: Int32) -> UInt32?
    /// The processes in a cgroup and in those below it.
    func processes(in cgroup: String) -> [Int32]
    /// A namespace's addresses, by the id vpnd's namespace gives it (nil: it does not answer
    /// by that id now).
    func addresses(inNamespace id: Int32) -> [InterfaceAddress]?
    /// Every relay process (RelayFinder); asked only when a namespace is relayed, as it reads
    /// every process's command line.
    func relays() -> [RelayFinder.Relay]
}
