import Addresses
import CLinux
import Descriptors
import Glibc
import Monotonic
import Netlink
import Nftables
import Plan
import Routing
import SocketPrograms
import Applying

/// The one edge where desired state meets the kernel. `apply` may be called again with
/// the same value and then changes nothing; each step is ordered so that no instant
/// exists in which a profile's traffic could leave outside its tunnel:
/// 1. nftables (the killswitch) in one atomic batch, 2. addresses and routes added, 3.
/// rules added, 4. stale rules removed, 5. stale routes, then addresses, removed, 6.
/// sysctls, 7. the socket programs (once the marks' rules and tables exist), then the
/// namespaces let out of their cgroups (once the rules that route them exist), 8. the routes
/// of learned addresses.
public final class KernelApplier: KernelApplying {
    private let nft: NftablesClient
    private let rtnl: Rtnetlink
    /// The table as last applied, counters zeroed: to skip or narrow the next replace.
    private var applied: NftTable?
    /// The bridge family's table as last applied, and whether the kernel was asked for one
    /// since start.
    private var appliedBridge: NftTable?
    private var bridgeLooked = false
    /// The same table as it was given, counters and all.
    private var appliedAsGiven: NftTable?
    /// Tables we put routes in, so a removed profile's routes are found and removed.
    private var knownTables: Set<UInt32> = []
    /// Called when our table, once applied, was found missing (someone deleted it) and
    /// was put back.
    public var onTableRestored: (() -> Void)?
    /// The socket programs' edge; nil only where a caller applies no programs (tests of
    /// the table alone).
    let programs: SocketProgramAttacher?
    /// Called with each new failure to attach a cgroup's programs.
    public var onProgramFailure: ((String) -> Void)?
    /// Called when the hold device could not be made or removed.
    public var onHoldDeviceFailure: ((String) -> Void)?
    /// Called with each transport port held while it drains (its exclusion was new).
    public var onTransportDrained: ((UInt16) -> Void)?
    /// Until when the table holds the draining rule (TransportRules.draining): the apply
    /// after it takes the rule out again. The elements end by their own timeout.
    private var drainingUntil: MonotonicInstant?
    /// Which learned addresses have routes, and until when.
    private var book = LearnedRouteBook()
    /// Whether the learned routes were compared with the kernel's since the table was
    /// (re)made: after a restart or a replace, the elements carried over need theirs.
    private var learnedChecked = false
    /// Who still uses an address whose element ends (sock_diag), opened on first need.
    private var diag: SocketDiag?
    /// A learned address still in use gets this much more, then is looked at again.
    static let inUseRenewal: UInt32 = 60
    /// Whether the kernel's routing changed since our rules, routes and steering addresses
    /// were last read back: vpnd applies once a second, and with 64 profiles that read (dumps
    /// that walk every route, the learned ones included) was most of what a quiet second cost.
    /// The learned routes' own events are not news here: that read does not cover them.
    private let routingEvents: RoutingMonitor
    /// The routing the last full read made the kernel match, and when that read was.
    private var routingInSync: (rules: [RoutingRule], routes: [Route], addresses: [InterfaceAddress], at: MonotonicInstant)?
    /// However quiet the events, the routing is read again after this long: whatever a
    /// change could slip past them by is put right within it.
    let routingReadInterval: Duration
    /// Full reads of the routing so far (tests, and what a quiet second costs).
    private(set) var routingReads = 0
    /// Whether the hold device was last made to exist (nil: not looked at since start).
    private var holdDeviceKept: Bool?
    private var holdDeviceFailure: String?
    /// The network namespace the applier's sockets were made in, where the hold device is
    /// made too: a TUN is made in the calling thread's namespace, which may be another.
    private let namespace: FileDescriptor
    /// The index of the hold device this applier made root's.
    private var claimedHoldDevice: Int32?

    init(programs: SocketProgramAttacher?, routingReadInterval: Duration = .seconds(10)) throws {
        nft = try NftablesClient()
        rtnl = try Rtnetlink()
        routingEvents = try RoutingMonitor(ignoringRoutesOf: [vpnexecLearnedRouteProtocol], keepingDeletions: false)
        namespace = try FileDescriptor.open("/proc/thread-self/ns/net", O_RDONLY)
        self.programs = programs
        self.routingReadInterval = routingReadInterval
    }

    public convenience init() throws { try self.init(programs: nil) }

    public func apply(_ state: DesiredState) throws {
        let now = MonotonicInstant.now()
        if let until = drainingUntil, now >= until { drainingUntil = nil }
        // A namespace no longer routed is held before its rules go (it is let out after them).
        if let failure = programs?.holdAgain(keeping: Set(state.namespacesLetOut.keys)) { onProgramFailure?(failure) }
        let remade = try applyTable(drainingUntil == nil ? state.nft : TransportRules.draining(state.nft))
        try applyBridgeTable(state.bridgeNft)
        // Drained before the read: what changes during it (our own changes too) is news for
        // the next apply, which reads once more.
        let routingChanged = routingEvents.drain()
        let inSync = !routingChanged && routingIsInSync(with: state, now: now)
        // Before the routes: the ones through the device are planned once it is there.
        // Without it (no TUN here), what is held meets the unreachable route, uncounted.
        if !inSync || state.holdDevice != holdDeviceKept {
            do {
                try keepHoldDevice(state.holdDevice)
                holdDeviceFailure = nil
            } catch {
                holdDeviceKept = state.holdDevice
                // Once per distinct failure: it is tried again at each full read.
                if "\(error)" != holdDeviceFailure { onHoldDeviceFailure?("\(error)") }
                holdDeviceFailure = "\(error)"
            }
        }
        if !inSync {
            routingInSync = nil
            let routing = try readRouting(routes: state.routes, rules: state.rules)
            // A transport port whose exclusion is new may have looped until now: held a second
            // before it goes direct, so what the loop left drains into the drop. The rule that
            // looks the map up and the elements go in before the exclusion rules.
            let draining = TransportRules.portsToDrain(adding: routing.adding(state.rules), present: routing.rules, drains: state.transportDrains)
            if !draining.isEmpty { try holdDraining(draining, drains: state.transportDrains, table: state.nft, now: now) }
            try writeRouting(rules: state.rules, routes: state.routes, addresses: state.addresses, over: routing)
            routingInSync = (state.rules, state.routes, state.addresses, now)
        }
        for sysctl in state.sysctls { try write(sysctl) }
        // Let out once the rules and routes are in, and before new programs are attached
        // (a restarted vpnd's replace the earlier ones, which let out from a map of their own).
        if let failure = programs?.letOut(state.namespacesLetOut) { onProgramFailure?(failure) }
        for failure in programs?.reconcile(state.socketPrograms, pathGuard: state.pathGuard) ?? [] { onProgramFailure?(failure) }
        try applyLearned(state.learnedRoutes, check: remade || !learnedChecked)
    }

    /// Everything of ours out of the kernel: the socket programs, the nft table (killswitch
    /// included), our rules and the routes in their tables.
    public func teardown() throws {
        _ = programs?.holdAgain(keeping: [])
        _ = programs?.reconcile([], pathGuard: nil)
        try nft.delete(family: .inet, table: vpnexecTableName)
        if try nft.tableExists(family: .bridge, name: vpnexecTableName) { try nft.delete(family: .bridge, table: vpnexecTableName) }
        appliedBridge = nil
        applied = nil
        appliedAsGiven = nil
        drainingUntil = nil
        try execute(book.respec([]))
        book = LearnedRouteBook()
        learnedChecked = false
        routingInSync = nil
        try writeRouting(rules: [], routes: [], addresses: [], over: try readRouting(routes: [], rules: []))
        for table in knownTables { try removeLearnedRoutes(in: table) }
        try keepHoldDevice(false)
    }

    // MARK: the hold device

    /// Makes the hold device (HoldDevice: a persistent TUN no one reads) exist, be root's and
    /// be up, or removes it. Root's: a TUN with no owner may be attached to by any user who
    /// can open /dev/net/tun, who would then read what is held. Claimed once per device (by
    /// its index: one made again is claimed again), as each attach and close turns its
    /// carrier on and off, a link event that would start another pass. One that another
    /// process holds open is deleted and made again. An interface of another kind under its
    /// name is left alone, and the plan routes nothing into it.
    private func keepHoldDevice(_ wanted: Bool) throws {
        let name = HoldDevice.name
        let link = try rtnl.link(named: name)
        if let link, link.kind != "tun" { holdDeviceKept = wanted; return }
        if wanted {
            if link == nil || link?.index != claimedHoldDevice {
                do {
                    try claimTUN(name)
                } catch let error as SystemError where error.code == EBUSY {
                    guard let link else { throw error }
                    try rtnl.deleteLink(index: link.index)
                    try claimTUN(name)
                }
                claimedHoldDevice = try rtnl.link(named: name)?.index
            }
            if let made = try rtnl.link(named: name), !made.isUp { try rtnl.setLink(index: made.index, up: true) }
        } else if link != nil {
            try releaseTUN(name)
            claimedHoldDevice = nil
        }
        holdDeviceKept = wanted
    }

    /// Attaches to the TUN `name` (made if missing), makes it root's and persistent, and
    /// lets go (the descriptor closes here).
    private func claimTUN(_ name: String) throws {
        let descriptor = try attachTUN(name)
        guard vx_tun_set_owner(descriptor.raw, 0) == 0 else { throw SystemError("TUNSETOWNER 0 on \(name)") }
        guard vx_tun_persist(descriptor.raw, 1) == 0 else { throw SystemError("TUNSETPERSIST 1 on \(name)") }
    }

    /// Not persistent any more: the interface goes when the descriptor closes, here.
    private func releaseTUN(_ name: String) throws {
        let descriptor = try attachTUN(name)
        guard vx_tun_persist(descriptor.raw, 0) == 0 else { throw SystemError("TUNSETPERSIST 0 on \(name)") }
    }

    private func attachTUN(_ name: String) throws -> FileDescriptor {
        try inOwnNamespace {
            let descriptor = try FileDescriptor.open("/dev/net/tun", O_RDWR)
            var out = [CChar](repeating: 0, count: 16)
            guard vx_tun_attach(descriptor.raw, name, 0, &out) == 0 else { throw SystemError("attach to TUN interface \(name)") }
            return descriptor
        }
    }

    /// `body` in the applier's network namespace (a TUN is made in the calling thread's):
    /// the thread enters it for the call where it is in another (tests that apply from
    /// outside; vpnd's one thread never is).
    private func inOwnNamespace<T: ~Copyable>(_ body: () throws -> T) throws -> T {
        var own = stat(), current = stat()
        guard fstat(namespace.raw, &own) == 0, stat("/proc/thread-self/ns/net", &current) == 0 else { throw SystemError("stat a network namespace") }
        if own.st_ino == current.st_ino && own.st_dev == current.st_dev { return try body() }
        let here = try FileDescriptor.open("/proc/thread-self/ns/net", O_RDONLY)
        guard vx_setns(namespace.raw, vx_clone_newnet()) == 0 else { throw SystemError("setns into the applier's network namespace") }
        defer { precondition(vx_setns(here.raw, vx_clone_newnet()) == 0, "could not return to the thread's network namespace") }
        return try body()
    }

    public var socketProgramsAttached: [SocketProgramAttachment]? { programs?.attachments }

    public func socketStorage(of attachment: SocketProgramAttachment) -> SocketStorage? { programs?.storage(of: attachment) }

    public var unguardedCgroups: [String: UnguardedCgroup] { programs?.unguarded ?? [:] }

    public var socketProgramsPutBack: Int { programs?.putBack ?? 0 }

    public func foreignNamespaces() -> [ForeignNamespaces.Seen] { programs?.foreignNamespaces() ?? [] }

    public func counters() throws -> [String: NftCounter] {
        try nft.counters(family: .inet, table: vpnexecTableName)
    }

    // MARK: nftables

    /// The bridge family's table (ContainerRules.bridgeTable): replaced whole when it
    /// changed or went missing, deleted when the plan has none (one left by an earlier vpnd
    /// too). It holds no counters or learned elements to carry over.
    private func applyBridgeTable(_ desired: NftTable?) throws {
        // Without bridged containers (most hosts, most seconds) one look after start suffices.
        if desired == nil, appliedBridge == nil, bridgeLooked { return }
        bridgeLooked = true
        let exists = try nft.tableExists(family: .bridge, name: vpnexecTableName)
        if let desired {
            if !exists || desired != appliedBridge { try nft.replace(desired) }
        } else if exists {
            try nft.delete(family: .bridge, table: vpnexecTableName)
        }
        appliedBridge = desired
    }

    /// Whether the table was made or replaced whole (the run-time elements in it then are
    /// what the kernel carried over, not what this applier added).
    @discardableResult
    private func applyTable(_ desired: NftTable) throws -> Bool {
        let exists = try nft.tableExists(family: desired.family, name: desired.name)
        if !exists && applied != nil { onTableRestored?() }
        // The same plan as last time (the reconciler plans again only when something changed)
        // compares by its arrays' storage, before a comparison of every rule.
        if exists, let applied, desired == appliedAsGiven || Self.comparable(applied) == Self.comparable(desired) { return false }
        var remade = false
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
            remade = true
        }
        applied = Self.comparable(desired)
        appliedAsGiven = desired
        return remade
    }

    /// An element that exists gets the new timeout; one acknowledgement for a burst of answers.
    /// Elements of sets whose addresses are routed (LearnedRoutes) get their routes before
    /// this returns, so the answer that follows finds them.
    public func addRuntimeElements(_ bySet: [String: [NftElement]]) throws {
        guard let applied else { throw ApplyError.noTableApplied }
        try nft.addElements(bySet, in: applied)
        try execute(book.added(Self.learned(bySet), now: .now()))
    }

    // MARK: learned routes

    private static func learned(_ bySet: [String: [NftElement]]) -> [(set: String, address: IPAddress, timeout: UInt32)] {
        bySet.flatMap { set, elements in
            elements.compactMap { element -> (set: String, address: IPAddress, timeout: UInt32)? in
                guard case let .prefix(prefix) = element.key, let timeout = element.timeout else { return nil }
                return (set, prefix.address, timeout)
            }
        }
    }

    /// The plan's learned routes; after the table was (re)made, the kernel's elements and
    /// learned routes are read back and made to agree; then what ended goes, but an address
    /// a connection still uses (a bypassed connection outlives its DNS answer) is renewed.
    private func applyLearned(_ specs: [LearnedRoutes], check: Bool) throws {
        try execute(book.respec(specs))
        let now = MonotonicInstant.now()
        if check {
            var held: [String: [NftElement]] = [:]
            for spec in specs {
                held[spec.set] = try elements(of: spec.set, ipv4: spec.ipv4)
                if case let .bypass(tunneled, _) = spec.kind { held[tunneled] = try elements(of: tunneled, ipv4: spec.ipv4) }
            }
            try execute(book.added(Self.learned(held), now: now))
            let wanted = book.routes
            var present = Set<Route>()
            for table in Set(specs.map(\.table)) {
                for ipv4 in [true, false] {
                    for route in try rtnl.routes(ipv4: ipv4, table: table, protocolNumber: vpnexecLearnedRouteProtocol) {
                        if wanted.contains(route) { present.insert(route) } else { try ignoreMissing { try rtnl.delete(route) } }
                    }
                }
            }
            // What the book has but the kernel lost (deleted while its events were lost).
            try execute(LearnedRouteBook.Changes(add: Array(wanted.subtracting(present))))
            learnedChecked = true
        }
        let due = book.due(now: now)
        guard !due.isEmpty else { return }
        let users = (try? connections()) ?? []
        var renew: [String: [NftElement]] = [:]
        // A tunneled set's element is kept by the bypass set's profile's connections too.
        var specs = book.specs
        for spec in book.specs.values {
            if case let .bypass(tunneled, _) = spec.kind { specs[tunneled] = spec }
        }
        let changes = book.expire(now: now) { set, address in
            guard let spec = specs[set], users.contains(where: { $0.destination == address && Self.uses($0, spec) }) else { return false }
            renew[set, default: []].append(NftElement(key: .prefix(IPPrefix(address: address, length: address.bitCount)!), timeout: Self.inUseRenewal))
            return true
        }
        try execute(changes)
        if !renew.isEmpty { try addRuntimeElements(renew) }
    }

    public func restoreLearnedRoutes(_ deleted: [Route]?) throws -> [Route] {
        guard let deleted else {
            learnedChecked = false
            return []
        }
        // The daemon's own removals come back as events too: the book no longer has them.
        let missing = deleted.filter(book.has)
        try execute(LearnedRouteBook.Changes(add: missing))
        return missing
    }

    /// Whether a connection keeps a learned address: a member of the profile connected to
    /// its bypassed address, anyone to a route.domains address.
    private static func uses(_ connection: SocketDiag.Connection, _ spec: LearnedRoutes) -> Bool {
        guard case .bypass = spec.kind else { return true }
        return connection.mark & spec.mask == spec.mark
    }

    private func connections() throws -> [SocketDiag.Connection] {
        if diag == nil { diag = try SocketDiag() }
        return try diag!.connections()
    }

    private func execute(_ changes: LearnedRouteBook.Changes) throws {
        for route in changes.remove { try ignoreMissing { try rtnl.delete(route) } }
        for route in changes.add {
            do { try rtnl.add(route) } catch let error as NetlinkError where error.code == EEXIST {}
        }
    }

    private func removeLearnedRoutes(in table: UInt32) throws {
        for ipv4 in [true, false] {
            for route in try rtnl.routes(ipv4: ipv4, table: table, protocolNumber: vpnexecLearnedRouteProtocol) {
                try ignoreMissing { try rtnl.delete(route) }
            }
        }
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

    /// The kernel still has the routing `state` wants: the last full read made it so, no
    /// routing event came since, and that read is recent.
    private func routingIsInSync(with state: DesiredState, now: MonotonicInstant) -> Bool {
        guard let last = routingInSync, now.since(last.at) < routingReadInterval else { return false }
        return last.rules == state.rules && last.routes == state.routes && last.addresses == state.addresses
    }

    /// Our rules, routes and steering addresses as the kernel has them, and the kernel's
    /// `lookup local` rules.
    private struct KernelRouting {
        var rules: [RoutingRule] = [], kernelLocal: [RoutingRule] = []
        var routes: Set<Route> = []
        var addresses: [InterfaceAddress] = []
        /// The tables of ours the routes were read from.
        var tables: Set<UInt32> = []

        /// The wanted rules the kernel lacks, in the plan's order. Sets, not the arrays:
        /// with 64 profiles each family has a few hundred rules, and this runs every second.
        func adding(_ wanted: [RoutingRule]) -> [RoutingRule] {
            let present = Set(rules)
            return wanted.filter { !present.contains($0) }
        }
    }

    /// The local table is the kernel's, though a rule of ours looks it up (DNSRouting).
    private static let notOurs: Set<UInt32> = [0, DNSRouting.localTable]

    private func readRouting(routes: [Route], rules: [RoutingRule]) throws -> KernelRouting {
        routingReads += 1
        var routing = KernelRouting()
        for ipv4 in [true, false] {
            let all = try rtnl.rules(ipv4: ipv4)
            routing.rules += all.filter { $0.protocolNumber == vpnexecRouteProtocol }
            routing.kernelLocal += all.filter(Self.isKernelLocalRule)
        }
        // The steering addresses on `lo` are ours by their prefix: one of a profile that
        // went (or of a vpnd that died) is found there, not in memory.
        routing.addresses = try rtnl.addresses().filter { DNSSteering.prefix6.contains($0.prefix.address) }
        routing.tables = knownTables.union(routing.rules.map(\.table)).union(routes.map(\.table)).union(rules.map(\.table)).subtracting(Self.notOurs)
        // One dump a family, of our protocol only: this runs every second, and the profiles'
        // tables may hold thousands of learned routes (another protocol) besides.
        for ipv4 in [true, false] {
            routing.routes.formUnion(try rtnl.routes(ipv4: ipv4, table: nil, protocolNumber: vpnexecRouteProtocol).filter { routing.tables.contains($0.table) })
        }
        return routing
    }

    /// The draining map looked up first for unmarked packets, with each port in it for
    /// TransportRules.drainSeconds.
    private func holdDraining(_ ports: [UInt16], drains: [UInt16: String], table: NftTable, now: MonotonicInstant) throws {
        drainingUntil = now + .seconds(Int(TransportRules.drainSeconds))
        try applyTable(TransportRules.draining(table))
        if let applied {
            try nft.addElements([TransportRules.drainingMapName: ports.compactMap { port in
                drains[port].map { NftElement(key: .port(port), verdict: .jump($0), timeout: TransportRules.drainSeconds) }
            }], in: applied)
        }
        for port in ports { onTransportDrained?(port) }
    }

    /// The kernel's routing made what is wanted, from what `routing` read.
    private func writeRouting(rules: [RoutingRule], routes: [Route], addresses: [InterfaceAddress], over routing: KernelRouting) throws {
        for address in addresses where !routing.addresses.contains(address) { try rtnl.add(address) }
        for route in routes where !routing.routes.contains(route) { try rtnl.add(route) }
        let wantedRules = Set(rules), presentRules = Set(routing.rules)
        let adding = routing.adding(rules)
        // The DNS rules go before the kernel's `lookup local` rule (DNSRouting): it moves from
        // 0 to after them, added there before it is taken from 0, so that no lookup ever
        // misses the local table; and back, the same way round, when they go. Each family
        // has its own.
        for rule in adding where rule.priority != DNSRouting.kernelLocalPriority { try rtnl.add(rule) }
        for ipv4 in [true, false] {
            let moved = DNSRouting.movedLocalRule(ipv4: ipv4)
            let kernel = routing.kernelLocal.filter { $0.ipv4 == ipv4 }
            if wantedRules.contains(moved) {
                for rule in kernel { try ignoreMissing { try rtnl.delete(rule) } }
            } else if kernel.isEmpty, presentRules.contains(moved) {
                try rtnl.add(DNSRouting.kernelLocalRule(ipv4: ipv4))
            }
        }
        for rule in adding where rule.priority == DNSRouting.kernelLocalPriority { try rtnl.add(rule) }
        let wantedRoutes = Set(routes)
        for rule in routing.rules where !wantedRules.contains(rule) { try ignoreMissing { try rtnl.delete(rule) } }
        for route in routing.routes where !wantedRoutes.contains(route) { try ignoreMissing { try rtnl.delete(route) } }
        for address in routing.addresses where !addresses.contains(address) { try ignoreMissing { try rtnl.delete(address) } }
        knownTables = Set(routes.map(\.table)).union(rules.map(\.table)).subtracting(Self.notOurs)
    }

    /// The local table's rule at 0, whoever added it (the kernel, or vpnd putting it back).
    static func isKernelLocalRule(_ rule: RoutingRule) -> Bool {
        let kernel = DNSRouting.kernelLocalRule(ipv4: rule.ipv4)
        var plain = rule
        plain.protocolNumber = kernel.protocolNumber
        return plain == kernel
    }

    /// Deleting what is already gone (the kernel removed a route with its interface) is done.
    private func ignoreMissing(_ body: () throws -> Void) throws {
        do { try body() } catch let error as NetlinkError where [ENOENT, ESRCH, EADDRNOTAVAIL].contains(error.code) {}
    }

    /// An interface's setting for an interface that went since the facts were read is moot:
    /// the next pass plans without it.
    private func write(_ sysctl: Sysctl) throws {
        do { try SysctlWriter.write(sysctl.path, sysctl.value) } catch {
            if error.code == ENOENT && sysctl.path.contains("/conf/") { return }
            throw error
        }
    }
}
