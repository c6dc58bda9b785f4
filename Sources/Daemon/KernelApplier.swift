import Glibc
import Netlink
import Nftables
import Plan
import Routing

/// The one edge where desired state meets the kernel. `apply` may be called again with
/// the same value and then changes nothing; each step is ordered so that no instant
/// exists in which a profile's traffic could leave outside its tunnel:
/// 1. nftables (the killswitch) in one atomic batch, 2. routes added, 3. rules added,
/// 4. stale rules removed, 5. stale routes removed, 6. sysctls, 7. birth marks (once the
/// marks' rules and tables exist; nothing depends on them for the killswitch).
public final class KernelApplier: KernelApplying {
    private let nft: NftablesClient
    private let rtnl: Rtnetlink
    /// The table as last applied, counters zeroed: to skip or narrow the next replace.
    private var applied: NftTable?
    /// Tables we put routes in, so a removed profile's routes are found and removed.
    private var knownTables: Set<UInt32> = []
    /// Called when our table, once applied, was found missing (someone deleted it) and
    /// was put back.
    public var onTableRestored: (() -> Void)?
    /// Where sockets are born marked; nil where the program could not be loaded.
    let socketMarks: SocketMarkAttacher?
    /// Called with each new failure to attach a cgroup's birth mark.
    public var onSocketMarkFailure: ((String) -> Void)?

    init(socketMarks: SocketMarkAttacher?) throws {
        nft = try NftablesClient()
        rtnl = try Rtnetlink()
        self.socketMarks = socketMarks
    }

    public convenience init() throws { try self.init(socketMarks: nil) }

    public func apply(_ state: DesiredState) throws {
        try applyTable(state.nft)
        try reconcileRouting(rules: state.rules, routes: state.routes)
        for sysctl in state.sysctls { try write(sysctl) }
        for failure in socketMarks?.reconcile(state.socketMarks) ?? [] { onSocketMarkFailure?(failure) }
    }

    /// Everything of ours out of the kernel: the nft table (killswitch included), our
    /// rules and the routes in their tables.
    public func teardown() throws {
        _ = socketMarks?.reconcile([])
        try nft.delete(family: .inet, table: vpnexecTableName)
        applied = nil
        try reconcileRouting(rules: [], routes: [])
    }

    public var socketMarksAttached: [String]? { socketMarks?.attached }

    public func counters() throws -> [String: NftCounter] {
        try nft.counters(family: .inet, table: vpnexecTableName)
    }

    // MARK: nftables

    private func applyTable(_ desired: NftTable) throws {
        let exists = try nft.tableExists(family: desired.family, name: desired.name)
        if !exists && applied != nil { onTableRestored?() }
        if exists, let applied, Self.comparable(applied) == Self.comparable(desired) { return }
        if exists, let applied, let edits = Self.elementEdits(from: applied, to: desired) {
            // Only elements changed (a cgroup appeared or went): a few elements, not a rebuild.
            for (set, removed) in edits.removed { try nft.deleteElements(removed, from: set, in: desired) }
            for (set, added) in edits.added { try nft.addElements(added, to: set, in: desired) }
        } else if exists, let applied, (try? nft.update(from: applied, to: desired)) != nil {
            // A reload: rules replaced, what stays kept (learned elements, counters) in one
            // transaction. Refused (the kernel's table is not what we applied: someone
            // changed it), the whole table is replaced below instead.
        } else {
            var table = desired
            if exists {
                // Counters survive a replace: the new objects start where the old ones were.
                let current = try nft.counters(family: desired.family, table: desired.name)
                for index in table.counters.indices {
                    if let old = current[table.counters[index].name] {
                        table.counters[index].packets = old.packets
                        table.counters[index].bytes = old.bytes
                    }
                }
                // So do elements learned at run time, with the time they had left: in the
                // same batch, so that no connection finds them missing (also after a restart
                // of vpnd: they are read from the kernel, not from memory).
                for index in table.sets.indices where table.sets[index].timeout {
                    let set = table.sets[index]
                    let held = Set(set.elements.map(\.key))
                    table.sets[index].elements += try nft.elements(of: set.name, keyType: set.key, family: desired.family, table: desired.name)
                        .filter { !held.contains($0.key) && ($0.timeout ?? 0) > 0 }
                }
            }
            try nft.replace(table)
        }
        applied = Self.comparable(desired)
    }

    /// An element that exists gets the new timeout; one acknowledgement for a burst of answers.
    public func addRuntimeElements(_ bySet: [String: [NftElement]]) throws {
        guard let applied else { throw ApplyError("no table applied yet") }
        try nft.addElements(bySet, in: applied)
    }

    /// The elements of one of our address sets as the kernel holds them now.
    public func elements(of set: String, ipv4: Bool) throws -> [NftElement] {
        try nft.elements(of: set, keyType: .address(ipv4: ipv4), family: .inet, table: vpnexecTableName)
    }

    /// The table as far as vpnd decides it: counters zeroed, and the elements of timeout
    /// sets left out (the kernel holds those; they are carried over, not compared).
    static func comparable(_ table: NftTable) -> NftTable {
        var copy = table
        for index in copy.counters.indices {
            copy.counters[index].packets = 0
            copy.counters[index].bytes = 0
        }
        for index in copy.sets.indices where copy.sets[index].timeout {
            copy.sets[index].elements = []
        }
        return copy
    }

    /// The element additions and removals that turn `old` into `new`, or nil when
    /// anything but elements differs.
    static func elementEdits(from old: NftTable, to new: NftTable) -> (added: [(String, [NftElement])], removed: [(String, [NftElement])])? {
        var oldShape = comparable(old), newShape = comparable(new)
        for index in oldShape.sets.indices { oldShape.sets[index].elements = [] }
        for index in newShape.sets.indices { newShape.sets[index].elements = [] }
        guard oldShape == newShape else { return nil }
        var added: [(String, [NftElement])] = [], removed: [(String, [NftElement])] = []
        for (before, after) in zip(old.sets, new.sets) where !after.timeout {
            // Interval sets hold boundaries, not elements: a change rebuilds the table.
            if after.interval && before.elements != after.elements { return nil }
            let plus = after.elements.filter { !before.elements.contains($0) }
            // An element whose key stays but whose verdict changes is removed, then added.
            let minus = before.elements.filter { !after.elements.contains($0) }
            if !plus.isEmpty { added.append((after.name, plus)) }
            if !minus.isEmpty { removed.append((after.name, minus)) }
        }
        return (added, removed)
    }

    // MARK: rules and routes

    private func reconcileRouting(rules desiredRules: [RoutingRule], routes desiredRoutes: [Route]) throws {
        var actualRules: [RoutingRule] = []
        for ipv4 in [true, false] {
            actualRules += try rtnl.rules(ipv4: ipv4).filter { $0.protocolNumber == vpnexecRouteProtocol }
        }
        let tables = knownTables.union(actualRules.map(\.table)).union(desiredRoutes.map(\.table)).union(desiredRules.map(\.table)).subtracting([0])
        var actualRoutes: [Route] = []
        for table in tables.sorted() {
            for ipv4 in [true, false] {
                actualRoutes += try rtnl.routes(ipv4: ipv4, table: table).filter { $0.protocolNumber == vpnexecRouteProtocol }
            }
        }
        for route in desiredRoutes where !actualRoutes.contains(route) { try rtnl.add(route) }
        for rule in desiredRules where !actualRules.contains(rule) { try rtnl.add(rule) }
        for rule in actualRules where !desiredRules.contains(rule) { try ignoreMissing { try rtnl.delete(rule) } }
        for route in actualRoutes where !desiredRoutes.contains(route) { try ignoreMissing { try rtnl.delete(route) } }
        knownTables = Set(desiredRoutes.map(\.table)).union(desiredRules.map(\.table)).subtracting([0])
    }

    /// Deleting what is already gone (the kernel removed a route with its interface) is done.
    private func ignoreMissing(_ body: () throws -> Void) throws {
        do { try body() } catch let error as NetlinkError where error.code == ENOENT || error.code == ESRCH {}
    }

    private func write(_ sysctl: Sysctl) throws {
        try SysctlWriter.write(sysctl.path, sysctl.value)
    }
}

public struct ApplyError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
