import Addresses
import Monotonic
import Plan
import Routing

/// Which learned addresses have routes (Plan/LearnedRoutes.swift), as a value fed with the
/// elements the DNS proxies add and the clock: what comes out is the routes to add and to
/// remove. An address keeps its routes while its element lives; a bypass address loses its
/// throw while the same profile's proxy has it in the tunneled set (the tunnel wins), and
/// gets it back when that element ends first.
struct LearnedRouteBook {
    struct Changes: Equatable {
        var add: [Route] = []
        var remove: [Route] = []
        var isEmpty: Bool { add.isEmpty && remove.isEmpty }
        mutating func append(_ other: Changes) {
            add += other.add
            remove += other.remove
        }
    }

    private(set) var specs: [String: LearnedRoutes] = [:]
    /// A tunneled set -> the bypass set it overrides.
    private var overrides: [String: String] = [:]
    /// When each element of a set with routes (or a tunneled set) ends.
    private(set) var expiries: [String: [IPAddress: MonotonicInstant]] = [:]
    /// The routes in the kernel for each address of each set.
    private(set) var installed: [String: [IPAddress: [Route]]] = [:]

    /// Every route the book has put in the kernel.
    var routes: Set<Route> { Set(installed.values.flatMap { $0.values.flatMap { $0 } }) }

    /// Whether the book has put `route` in the kernel: a lookup by address in each set, not
    /// a walk of every route (vpnd asks for each deleted one, its own expiries included).
    func has(_ route: Route) -> Bool {
        installed.values.contains { $0[route.destination.address]?.contains(route) == true }
    }

    /// Whether `set` is one whose elements the book follows.
    func follows(_ set: String) -> Bool { specs[set] != nil || overrides[set] != nil }

    /// A new plan: every address's routes again (a table, a device or a hold changed).
    mutating func respec(_ learned: [LearnedRoutes]) -> Changes {
        let wanted = Dictionary(learned.map { ($0.set, $0) }, uniquingKeysWith: { a, _ in a })
        guard wanted != specs else { return Changes() }
        specs = wanted
        overrides = [:]
        for spec in learned {
            if case let .bypass(tunneled, _) = spec.kind { overrides[tunneled] = spec.set }
        }
        expiries = expiries.filter { follows($0.key) }
        var changes = Changes()
        for set in Array(installed.keys) where specs[set] == nil {
            changes.remove += installed.removeValue(forKey: set)!.values.flatMap { $0 }
        }
        for set in specs.keys {
            for address in expiries[set].map({ Array($0.keys) }) ?? [] { changes.append(refresh(set, address)) }
        }
        return changes
    }

    /// Elements the kernel took (`timeout` seconds from `now`); an element's end only moves later.
    mutating func added(_ elements: [(set: String, address: IPAddress, timeout: UInt32)], now: MonotonicInstant) -> Changes {
        var changes = Changes()
        for element in elements where follows(element.set) {
            let ends = now + .seconds(Int64(element.timeout))
            if let known = expiries[element.set]?[element.address], known >= ends { continue }
            expiries[element.set, default: [:]][element.address] = ends
            changes.append(touched(element.set, element.address))
        }
        return changes
    }

    /// Elements whose time is up, except those `inUse` keeps (a connection to the address
    /// still open: its element is renewed by the caller, its routes stay).
    mutating func expire(now: MonotonicInstant, inUse: (String, IPAddress) -> Bool = { _, _ in false }) -> Changes {
        var changes = Changes()
        for (set, addresses) in expiries {
            for (address, ends) in addresses where ends <= now && !inUse(set, address) {
                expiries[set]?[address] = nil
                changes.append(touched(set, address))
            }
        }
        return changes
    }

    /// Elements whose time is up at `now`.
    func due(now: MonotonicInstant) -> [(set: String, address: IPAddress)] {
        expiries.flatMap { set, addresses in addresses.filter { $0.value <= now }.map { (set, $0.key) } }
    }

    /// The routes of `address` in `set`, and in the bypass set a tunneled set overrides.
    private mutating func touched(_ set: String, _ address: IPAddress) -> Changes {
        if let bypass = overrides[set] { return refresh(bypass, address) }
        return refresh(set, address)
    }

    private mutating func refresh(_ set: String, _ address: IPAddress) -> Changes {
        guard let spec = specs[set] else { return Changes() }
        var wanted: [Route] = []
        if expiries[set]?[address] != nil {
            var tunneled = false
            if case let .bypass(tunneledSet, _) = spec.kind { tunneled = expiries[tunneledSet]?[address] != nil }
            wanted = spec.routes(for: address, tunneled: tunneled)
        }
        let have = installed[set]?[address] ?? []
        installed[set, default: [:]][address] = wanted.isEmpty ? nil : wanted
        return Changes(add: wanted.filter { !have.contains($0) }, remove: have.filter { !wanted.contains($0) })
    }
}
