import Addresses
import HexDigits
import TOML

/// Looks up user and group names; the system one reads the user database, tests pass
/// their own.
public protocol NameResolver: Sendable {
    func uid(ofUser name: String) -> UInt32?
    func gid(ofGroup name: String) -> UInt32?
}

/// One policy file's text and the path messages should name.
public struct PolicySource: Sendable {
    public var path: String
    public var text: String

    public init(path: String, text: String) {
        self.path = path
        self.text = text
    }
}

extension Policy {
    /// Keys of DESIGN's policy format that this version does not implement yet. Accepting
    /// and ignoring them would leave an admin believing traffic is guarded when it is not.
    static let unsupportedProfileKeys: [String: String] = [:]
    static let unsupportedListKeys: [String: String] = [:]

    /// Parses and validates policy files together (duplicates and mark conflicts are
    /// across files). Throws every problem found, each with its file:line. `previous`: the
    /// index each profile has in the policy in force (by name), which it keeps.
    public static func parse(_ sources: [PolicySource], resolver: NameResolver, previous: [String: UInt32] = [:]) throws(PolicyError) -> Policy {
        let log = DiagnosticLog()
        var drafts: [ProfileDraft] = []
        var routing = RoutingSettings()
        var dns = DNSSettings()
        var system = SystemDraft()
        for source in sources {
            let document: TOMLTable
            do {
                document = try TOML.parse(source.text)
            } catch {
                log.error("invalid TOML: \(error.message)", at: SourceLocation(file: source.path, error.position))
                continue
            }
            var top = TableReader(document, file: source.path, context: "", log: log)
            if let profiles = top.table("profile") {
                for entry in profiles.entries {
                    drafts += ProfileDraft.read(entry, file: source.path, log: log, resolver: resolver).map { [$0] } ?? []
                }
            }
            dns = top.section("dns", setAt: dns.location, read: DNSSettings.read) ?? dns
            routing = top.section("routing", setAt: routing.location, read: RoutingSettings.read) ?? routing
            system = top.section("system", setAt: system.location) { SystemSettings.read($0, resolver: resolver) } ?? system
            top.reportUnknownKeys()
        }
        let profiles = assign(drafts, routing: routing, previous: previous, log: log)
        if let name = system.profile, !profiles.contains(where: { $0.name == name }), !drafts.contains(where: { $0.name == name }) {
            let known = drafts.map(\.name)
            log.error("[system] profile \"\(name)\" is not defined\(known.isEmpty ? "" : "; profiles: " + known.joined(separator: ", "))",
                      at: system.profileLocation)
        }
        guard log.diagnostics.isEmpty else { throw PolicyError(log.diagnostics) }
        return Policy(profiles: profiles, routing: routing, dns: dns, system: system.settings)
    }

    /// Marks and tables: explicit ones first (conflicts are errors), then each profile that
    /// had an index in the policy in force keeps it, then the others take the lowest free
    /// index, in definition order: one that no profile of the policy in force had, if there
    /// is one. A reload that removes or adds a profile so moves no other profile's mark (its
    /// members' sockets keep theirs: one changed would be another profile's, or none), and a
    /// new profile does not take the mark of one just removed.
    private static func assign(_ drafts: [ProfileDraft], routing: RoutingSettings, previous: [String: UInt32], log: DiagnosticLog) -> [Profile] {
        let unique = definedOnce(drafts, log: log)
        var indexOwner = explicitIndexes(unique, routing: routing, log: log)
        var tableOwner = explicitTables(unique, log: log)
        let kept = keptIndexes(unique, previous: previous, routing: routing, owners: &indexOwner)
        let heldBefore = Set(previous.values)
        let fields = ProfileDraft.fields
        var profiles: [Profile] = []
        for draft in unique {
            guard let index = index(for: draft, kept: kept, heldBefore: heldBefore, routing: routing, owners: &indexOwner, log: log),
                  let table = table(for: draft, index: index, routing: routing, owners: &tableOwner, log: log),
                  let tunnel = draft.tunnel, !sharesBuiltInInterface(tunnel, of: draft, with: profiles, log: log) else { continue }
            var profile = Profile(name: draft.name, location: draft.location, tunnel: tunnel, access: draft.access,
                                  killswitch: draft.killswitch, index: index, table: table)
            for field in fields { field.apply(draft, &profile) }
            profiles.append(profile)
        }
        checkRouteNetworks(unique, log: log)
        checkForwardInterfaces(unique, log: log)
        checkRouteListTables(profiles, log: log)
        checkVia(profiles, log: log)
        checkExecutables(unique, log: log)
        checkDomains(unique, log: log)
        return profiles
    }

    /// The drafts but the second and later of a name.
    private static func definedOnce(_ drafts: [ProfileDraft], log: DiagnosticLog) -> [ProfileDraft] {
        var seenNames: [String: SourceLocation] = [:]
        var unique: [ProfileDraft] = []
        for draft in drafts {
            if let first = seenNames[draft.name] {
                log.error("profile \"\(draft.name)\" is defined twice (first at \(first))", at: draft.location)
                continue
            }
            seenNames[draft.name] = draft.location
            unique.append(draft)
        }
        return unique
    }

    /// The indexes that marks set explicitly, by the profile that set each first.
    private static func explicitIndexes(_ drafts: [ProfileDraft], routing: RoutingSettings, log: DiagnosticLog) -> [UInt32: ProfileDraft] {
        var owners: [UInt32: ProfileDraft] = [:]
        for draft in drafts {
            guard let (mark, at) = draft.mark else { continue }
            let index = mark >> routing.markShift
            guard mark != 0, mark & ~routing.markMask == 0, mark & ((1 << routing.markShift) - 1) == 0, index <= routing.maximumIndex else {
                log.error("profile \"\(draft.name)\": mark \(hex(mark)) must be a non-zero value under the mark mask \(hex(routing.markMask)) other than the mask itself (reserved for bypass)", at: at)
                continue
            }
            if let other = owners[index] {
                log.error("profile \"\(draft.name)\" uses mark \(hex(mark)), already used by profile \"\(other.name)\" (\(other.mark?.1.description ?? other.location.description))", at: at)
                continue
            }
            owners[index] = draft
        }
        return owners
    }

    /// The tables set explicitly, by the profile that set each first.
    private static func explicitTables(_ drafts: [ProfileDraft], log: DiagnosticLog) -> [UInt32: ProfileDraft] {
        var owners: [UInt32: ProfileDraft] = [:]
        for draft in drafts {
            guard let (table, at) = draft.table else { continue }
            if let other = owners[table] {
                log.error("profile \"\(draft.name)\" uses routing table \(table), already used by profile \"\(other.name)\" (\(other.table?.1.description ?? ""))", at: at)
                continue
            }
            owners[table] = draft
        }
        return owners
    }

    /// The index each profile without a mark had in the policy in force, where it is still
    /// in range and no mark took it.
    private static func keptIndexes(_ drafts: [ProfileDraft], previous: [String: UInt32], routing: RoutingSettings,
                                    owners: inout [UInt32: ProfileDraft]) -> [String: UInt32] {
        var kept: [String: UInt32] = [:]
        for draft in drafts where draft.mark == nil {
            guard let index = previous[draft.name], (1...routing.maximumIndex).contains(index), owners[index] == nil else { continue }
            owners[index] = draft
            kept[draft.name] = index
        }
        return kept
    }

    /// The draft's mark's index, the one it kept, or the lowest free one that no profile of
    /// the policy in force had (else the lowest free one); nil when none is free.
    private static func index(for draft: ProfileDraft, kept: [String: UInt32], heldBefore: Set<UInt32>, routing: RoutingSettings,
                              owners: inout [UInt32: ProfileDraft], log: DiagnosticLog) -> UInt32? {
        if let (mark, _) = draft.mark { return mark >> routing.markShift }
        if let keep = kept[draft.name] { return keep }
        let taken = owners
        let free = (1...max(1, routing.maximumIndex)).lazy.filter { taken[$0] == nil && $0 <= routing.maximumIndex }
        guard let next = free.first(where: { !heldBefore.contains($0) }) ?? free.first else {
            log.error("too many profiles: the mark mask \(hex(routing.markMask)) has room for \(routing.maximumIndex)", at: draft.location)
            return nil
        }
        owners[next] = draft
        return next
    }

    /// The draft's own table, or table_base + its index unless another profile set that
    /// one; nil then.
    private static func table(for draft: ProfileDraft, index: UInt32, routing: RoutingSettings,
                              owners: inout [UInt32: ProfileDraft], log: DiagnosticLog) -> UInt32? {
        if let (table, _) = draft.table { return table }
        let table = routing.tableBase + index
        if let other = owners[table], other.name != draft.name {
            log.error("profile \"\(draft.name)\" would use routing table \(table) (table_base + its index), which profile \"\(other.name)\" sets explicitly; set `table` for one of them", at: draft.location)
            return nil
        }
        owners[table] = draft
        return table
    }

    /// A built-in tunnel's interface is its profile's alone.
    private static func sharesBuiltInInterface(_ tunnel: Tunnel, of draft: ProfileDraft, with profiles: [Profile], log: DiagnosticLog) -> Bool {
        guard let other = profiles.first(where: { $0.tunnel.interfaceName == tunnel.interfaceName }),
              other.tunnel.isBuiltIn || tunnel.isBuiltIn else { return false }
        log.error("profile \"\(draft.name)\" uses interface \(tunnel.interfaceName), which profile \"\(other.name)\" uses for \(other.tunnel.isBuiltIn ? "its built-in tunnel" : "its tunnel"); a built-in tunnel's interface belongs to one profile", at: draft.location)
        return true
    }

    /// Each profile's route lists and DNS have a table of their own (`routeListTable`,
    /// `dnsTable`): none may be a profile's table nor one of the kernel's.
    private static func checkRouteListTables(_ profiles: [Profile], log: DiagnosticLog) {
        let owners = Dictionary(profiles.map { ($0.table, $0.name) }, uniquingKeysWith: { a, _ in a })
        for profile in profiles {
            for (table, what, offset) in [(profile.routeListTable, "route lists table", 65536), (profile.dnsTable, "DNS table", 131072)] {
                let clash = [0, 253, 254, 255].contains(table) ? "a table of the kernel's" : owners[table].map { "profile \"\($0)\"'s table" }
                if let clash {
                    log.error("profile \"\(profile.name)\" uses routing table \(profile.table), and its \(what) \(profile.table) + \(offset) = \(table), which is \(clash); choose another `table`", at: profile.location)
                }
            }
        }
    }

    /// An executable has one fate: joining one profile (route), or leaving the profiles that
    /// list it as bypass; never both, never two profiles.
    private static func checkExecutables(_ drafts: [ProfileDraft], log: DiagnosticLog) {
        checkOneFate(drafts, routed: \.routeExecutables, bypassed: \.bypassExecutables, list: "executables",
                     one: "an executable joins one profile", either: "an executable either bypasses or is routed", log: log)
    }

    /// A name has one fate, as an executable: routed into one profile, or bypassed by the
    /// profiles that list it, never both.
    private static func checkDomains(_ drafts: [ProfileDraft], log: DiagnosticLog) {
        checkOneFate(drafts, routed: \.routeDomains, bypassed: \.bypassDomains, list: "domains",
                     one: "a name goes into one tunnel", either: "a name either bypasses or is routed", log: log)
    }

    private static func checkOneFate<Item: Hashable & CustomStringConvertible>(
        _ drafts: [ProfileDraft], routed routeList: KeyPath<ProfileDraft, [(Item, SourceLocation)]>,
        bypassed bypassList: KeyPath<ProfileDraft, [(Item, SourceLocation)]>, list: String, one: String, either: String, log: DiagnosticLog
    ) {
        var routed: [Item: (profile: String, at: SourceLocation)] = [:]
        for draft in drafts {
            for (item, at) in draft[keyPath: routeList] {
                if let other = routed[item], other.profile != draft.name {
                    log.error("profile \"\(draft.name)\": route.\(list) \(item) is already routed into profile \"\(other.profile)\" (\(other.at)); \(one)", at: at)
                }
                routed[item] = (draft.name, at)
            }
        }
        for draft in drafts {
            for (item, at) in draft[keyPath: bypassList] {
                if let other = routed[item] {
                    log.error("profile \"\(draft.name)\": bypass.\(list) \(item) is routed into profile \"\(other.profile)\" (\(other.at)); \(either)", at: at)
                }
            }
        }
    }

    /// What arrives on an interface is one profile's, and no profile's tunnel is one of them
    /// (its own packets would be routed back into a tunnel).
    private static func checkForwardInterfaces(_ drafts: [ProfileDraft], log: DiagnosticLog) {
        var claimed: [String: (profile: String, at: SourceLocation)] = [:]
        let tunnels = Dictionary(drafts.compactMap { draft in draft.tunnel.map { ($0.interfaceName, draft.name) } }, uniquingKeysWith: { a, _ in a })
        for draft in drafts {
            for (name, at) in draft.forwardInterfaces {
                if let owner = tunnels[name] {
                    log.error("profile \"\(draft.name)\": forward.interfaces \(name) is the tunnel of profile \"\(owner)\"; list the interfaces whose traffic goes into the tunnel (a VM's bridge or tap)", at: at)
                } else if let other = claimed[name], other.profile != draft.name {
                    log.error("profile \"\(draft.name)\": forward.interfaces \(name) is profile \"\(other.profile)\"'s too (\(other.at)); what arrives on an interface goes into one tunnel", at: at)
                } else {
                    claimed[name] = (draft.name, at)
                }
            }
        }
    }

    /// A network goes into one tunnel: the same or overlapping networks in two profiles'
    /// route lists are an error.
    private static func checkRouteNetworks(_ drafts: [ProfileDraft], log: DiagnosticLog) {
        var claimed: [(prefix: IPPrefix, profile: String, at: SourceLocation)] = []
        for draft in drafts {
            for (prefix, at) in draft.routeNetworks {
                if let other = claimed.first(where: { $0.profile != draft.name && ($0.prefix.contains(prefix) || prefix.contains($0.prefix)) }) {
                    log.error("profile \"\(draft.name)\": route.networks \(prefix) overlaps \(other.prefix) of profile \"\(other.profile)\" (\(other.at)); a network goes into one tunnel", at: at)
                }
                claimed.append((prefix, draft.name, at))
            }
        }
    }
}
