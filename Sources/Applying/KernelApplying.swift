import Nftables
import Plan
import Routing
import SocketPrograms

/// What vpnd asks of the kernel edge, and all it asks: the desired state applied
/// (idempotently), run-time set elements added and read, the counters read, everything of
/// ours removed. KernelApplier is the real one (proven against the kernel by the namespace
/// tests); FakeKernelApplier records what it was asked, so the daemon's decisions are unit
/// tests without root (the shape of tailscale's router.Router and router_fake.go).
public protocol KernelApplying: AnyObject {
    /// Makes the kernel match `state`; again with the same value, changes nothing.
    func apply(_ state: DesiredState) throws
    /// Elements with timeouts (what the DNS proxies learned) into sets of the applied
    /// table, in one batch; returns once the kernel acknowledged them.
    func addRuntimeElements(_ bySet: [String: [NftElement]]) throws
    /// The elements of one of our address sets as the kernel holds them now.
    func elements(of set: String, ipv4: Bool) throws -> [NftElement]
    /// Learned routes the routing monitor saw deleted: those still wanted are put back, and
    /// returned. nil (events were lost): the next `apply` compares them all with the kernel.
    func restoreLearnedRoutes(_ deleted: [Route]?) throws -> [Route]
    /// Our named counters, by name.
    func counters() throws -> [String: NftCounter]
    /// Everything of ours out of the kernel: the nft table (killswitch included), our rules
    /// and the routes in their tables.
    func teardown() throws
    /// Where the socket programs are attached now (status); nil where this applier
    /// attaches none.
    var socketProgramsAttached: [SocketProgramAttachment]? { get }
    /// What the programs hold for an attachment: its settings and the kernel's counters.
    func socketStorage(of attachment: SocketProgramAttachment) -> SocketStorage?
    /// Planned cgroups the kernel lacked programs of at the last apply (asked of the
    /// kernel, not remembered), by path.
    var unguardedCgroups: [String: UnguardedCgroup] { get }
    /// Socket programs put back after someone else detached them, since vpnd started.
    var socketProgramsPutBack: Int { get }
    /// Members' network namespaces other than vpnd's that the programs have seen.
    func foreignNamespaces() -> [ForeignNamespaces.Seen]
}

extension KernelApplying {
    public func addRuntimeElements(_ elements: [NftElement], to set: String) throws {
        try addRuntimeElements([set: elements])
    }
}
