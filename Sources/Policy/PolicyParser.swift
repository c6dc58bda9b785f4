import Addresses
import DNS
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
    /// across files). Throws every problem found, each with its file:line.
    public static func parse(_ sources: [PolicySource], resolver: NameResolver) throws(PolicyError) -> Policy {
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
            if let table = top.table("dns") {
                let reader = TableReader(table, file: source.path, context: "[dns]", log: log)
                if let first = dns.location {
                    log.error("[dns] is set again (first at \(first)); set it in one file only", at: reader.location)
                } else {
                    dns = DNSSettings.read(reader)
                }
            }
            if let table = top.table("routing") {
                let reader = TableReader(table, file: source.path, context: "[routing]", log: log)
                if let first = routing.location {
                    log.error("[routing] is set again (first at \(first)); set it in one file only", at: reader.location)
                } else {
                    routing = RoutingSettings.read(reader)
                }
            }
            if let table = top.table("system") {
                let reader = TableReader(table, file: source.path, context: "[system]", log: log)
                if let first = system.location {
                    log.error("[system] is set again (first at \(first)); set it in one file only", at: reader.location)
                } else {
                    system = SystemSettings.read(reader, resolver: resolver)
                }
            }
            top.reportUnknownKeys()
        }
        let profiles = assign(drafts, routing: routing, log: log)
        if let name = system.profile, !profiles.contains(where: { $0.name == name }), !drafts.contains(where: { $0.name == name }) {
            let known = drafts.map(\.name)
            log.error("[system] profile \"\(name)\" is not defined\(known.isEmpty ? "" : "; profiles: " + known.joined(separator: ", "))",
                      at: system.profileLocation)
        }
        guard log.diagnostics.isEmpty else { throw PolicyError(log.diagnostics) }
        return Policy(profiles: profiles, routing: routing, dns: dns, system: system.settings)
    }

    /// Marks and tables: explicit ones first (conflicts are errors), then the lowest
    /// free index for the others, in definition order.
    private static func assign(_ drafts: [ProfileDraft], routing: RoutingSettings, log: DiagnosticLog) -> [Profile] {
        var seenNames: [String: SourceLocation] = [:]
        var indexOwner: [UInt32: ProfileDraft] = [:]
        var tableOwner: [UInt32: ProfileDraft] = [:]
        var unique: [ProfileDraft] = []
        for draft in drafts {
            if let first = seenNames[draft.name] {
                log.error("profile \"\(draft.name)\" is defined twice (first at \(first))", at: draft.location)
                continue
            }
            seenNames[draft.name] = draft.location
            unique.append(draft)
        }
        for draft in unique {
            guard let (mark, at) = draft.mark else { continue }
            let index = mark >> routing.markShift
            guard mark != 0, mark & ~routing.markMask == 0, mark & ((1 << routing.markShift) - 1) == 0, index <= routing.maximumIndex else {
                log.error("profile \"\(draft.name)\": mark \(hex(mark)) must be a non-zero value under the mark mask \(hex(routing.markMask)) other than the mask itself (reserved for bypass)", at: at)
                continue
            }
            if let other = indexOwner[index] {
                log.error("profile \"\(draft.name)\" uses mark \(hex(mark)), already used by profile \"\(other.name)\" (\(other.mark?.1.description ?? other.location.description))", at: at)
                continue
            }
            indexOwner[index] = draft
        }
        for draft in unique {
            guard let (table, at) = draft.table else { continue }
            if let other = tableOwner[table] {
                log.error("profile \"\(draft.name)\" uses routing table \(table), already used by profile \"\(other.name)\" (\(other.table?.1.description ?? ""))", at: at)
                continue
            }
            tableOwner[table] = draft
        }
        var profiles: [Profile] = []
        var nextIndex: UInt32 = 1
        for draft in unique {
            var index: UInt32
            if let (mark, _) = draft.mark {
                index = mark >> routing.markShift
            } else {
                while indexOwner[nextIndex] != nil { nextIndex += 1 }
                guard nextIndex <= routing.maximumIndex else {
                    log.error("too many profiles: the mark mask \(hex(routing.markMask)) has room for \(routing.maximumIndex)", at: draft.location)
                    continue
                }
                index = nextIndex
                indexOwner[index] = draft
            }
            let table = draft.table?.0 ?? routing.tableBase + index
            if draft.table == nil, let other = tableOwner[table], other.name != draft.name {
                log.error("profile \"\(draft.name)\" would use routing table \(table) (table_base + its index), which profile \"\(other.name)\" sets explicitly; set `table` for one of them", at: draft.location)
                continue
            }
            if draft.table == nil { tableOwner[table] = draft }
            guard let tunnel = draft.tunnel else { continue }
            if let other = profiles.first(where: { $0.tunnel.interfaceName == tunnel.interfaceName }),
               other.tunnel.isBuiltIn || tunnel.isBuiltIn {
                log.error("profile \"\(draft.name)\" uses interface \(tunnel.interfaceName), which profile \"\(other.name)\" uses for \(other.tunnel.isBuiltIn ? "its built-in tunnel" : "its tunnel"); a built-in tunnel's interface belongs to one profile", at: draft.location)
                continue
            }
            var profile = Profile(name: draft.name, location: draft.location, tunnel: tunnel, access: draft.access,
                                  killswitch: draft.killswitch, index: index, table: table,
                                  allowLAN: draft.allowLAN, allowMulticast: draft.allowMulticast,
                                  routeNetworks: IPPrefix.covering(draft.routeNetworks.map(\.0)),
                                  bypassExecutables: Array(Set(draft.bypassExecutables.map(\.0))).sorted(),
                                  routeExecutables: Array(Set(draft.routeExecutables.map(\.0))).sorted(),
                                  dnsServers: draft.dnsServers,
                                  bypassDomains: sortedUnique(draft.bypassDomains.map(\.0)),
                                  routeDomains: sortedUnique(draft.routeDomains.map(\.0)), apps: Array(Set(draft.apps)).sorted())
            profile.allowEncryptedDNS = draft.allowEncryptedDNS
            profile.trusted = draft.trusted
            profile.via = draft.via
            profile.servers = draft.servers
            profile.onDemand = draft.onDemand
            profile.reconnect = draft.reconnect
            profile.executableLocations = Dictionary(draft.routeExecutables + draft.bypassExecutables, uniquingKeysWith: { first, _ in first })
            profiles.append(profile)
        }
        checkRouteNetworks(unique, log: log)
        checkVia(profiles, log: log)
        checkExecutables(unique, log: log)
        checkDomains(unique, log: log)
        return profiles
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

/// Each pattern once, in the order of their text; the text is made once per pattern, not
/// once per comparison (a list may hold 100,000 names).
private func sortedUnique(_ patterns: [DomainPattern]) -> [DomainPattern] {
    Set(patterns).map { ($0.description, $0) }.sorted { $0.0 < $1.0 }.map(\.1)
}

/// A profile as read, before marks and tables are assigned.
struct ProfileDraft {
    var name: String
    var location: SourceLocation
    var tunnel: Tunnel?
    var access: Access
    var killswitch: Bool
    var mark: (UInt32, SourceLocation)?
    var table: (UInt32, SourceLocation)?
    var allowLAN = false
    var allowMulticast = false
    var routeNetworks: [(IPPrefix, SourceLocation)] = []
    var bypassExecutables: [(String, SourceLocation)] = []
    var routeExecutables: [(String, SourceLocation)] = []
    var dnsServers: [IPAddress] = []
    var bypassDomains: [(DomainPattern, SourceLocation)] = []
    var routeDomains: [(DomainPattern, SourceLocation)] = []
    var apps: [String] = []
    var allowEncryptedDNS = false
    var trusted: [TrustedRule] = []
    var via: Via?
    var servers: ServerList?
    var onDemand: OnDemandSettings?
    var reconnect: Reconnect?

    /// Profile names become cgroup/slice names and nft chain names. A dash would make
    /// systemd read "vpn-a-b.slice" as a child of "vpn-a.slice", so none are allowed.
    static func validName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first), name.count <= 32 else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    static func read(_ entry: TOMLTable.Entry, file: String, log: DiagnosticLog, resolver: NameResolver) -> ProfileDraft? {
        let at = SourceLocation(file: file, entry.keyPosition)
        guard validName(entry.key) else {
            log.error("profile name \"\(entry.key)\" must start with a lower-case letter and contain only a-z, 0-9 and _ (at most 32; no dash: systemd reads dashes in slice names as nesting)", at: at)
            return nil
        }
        guard entry.key != Policy.bypassSliceName else {
            log.error("profile name \"bypass\" is reserved: vpn-bypass.slice is where processes that go direct are placed", at: at)
            return nil
        }
        guard case let .table(table) = entry.value.kind else {
            log.error("profile.\(entry.key) must be a table ([profile.\(entry.key)]), not \(entry.value.kind.typeName)", at: at)
            return nil
        }
        var reader = TableReader(table, file: file, context: "[profile.\(entry.key)]", log: log)
        var via: Via?, servers: ServerList?
        let tunnel = readTunnel(&reader, profile: entry.key, via: &via, servers: &servers)
        let reconnect = readReconnect(&reader, tunnel: tunnel)
        var users: [Principal] = []
        var groups: [Principal] = []
        for (item, itemAt) in reader.namesOrNumbers("users") ?? [] {
            if let principal = principal(item, at: itemAt, kind: "user", lookup: resolver.uid(ofUser:), log: log) { users.append(principal) }
        }
        for (item, itemAt) in reader.namesOrNumbers("groups") ?? [] {
            if let principal = principal(item, at: itemAt, kind: "group", lookup: resolver.gid(ofGroup:), log: log) { groups.append(principal) }
        }
        let accessAt = reader.keyLocation("users") ?? reader.keyLocation("groups") ?? reader.location
        let killswitch = reader.bool("killswitch") ?? true
        var mark: (UInt32, SourceLocation)?
        if let (value, valueAt) = reader.integer("mark") {
            if let value = UInt32(exactly: value) { mark = (value, valueAt) } else {
                log.error("[profile.\(entry.key)] mark \(value) is not a 32-bit value", at: valueAt)
            }
        }
        var routingTable: (UInt32, SourceLocation)?
        if let (value, valueAt) = reader.integer("table") {
            // 0 is "unspecified"; 253-255 are the kernel's default, main and local tables.
            if let value = UInt32(exactly: value), value != 0, !(253...255).contains(value) {
                routingTable = (value, valueAt)
            } else {
                log.error("[profile.\(entry.key)] table \(value) must be a routing table id from 1 to 4294967295 other than 253, 254 and 255 (default, main, local)", at: valueAt)
            }
        }
        let allowLAN = reader.bool("allow_lan") ?? false
        let allowMulticast = reader.bool("allow_multicast") ?? false
        if allowMulticast && !allowLAN, let at = reader.keyLocation("allow_multicast") {
            log.error("[profile.\(entry.key)] allow_multicast needs allow_lan = true (multicast is part of reaching the LAN)", at: at)
        }
        var routeNetworks: [(IPPrefix, SourceLocation)] = []
        var routeExecutables: [(String, SourceLocation)] = []
        var bypassExecutables: [(String, SourceLocation)] = []
        var routeDomains: [(DomainPattern, SourceLocation)] = []
        var bypassDomains: [(DomainPattern, SourceLocation)] = []
        if let route = reader.table("route") {
            var routeReader = TableReader(route, file: file, context: "[profile.\(entry.key)] route", log: log)
            routeNetworks = routeReader.prefixes("networks") ?? []
            routeExecutables = routeReader.executables("executables") ?? []
            routeDomains = routeReader.domains("domains") ?? []
            routeReader.reportUnknownKeys(unsupported: Policy.unsupportedListKeys)
        }
        if let bypass = reader.table("bypass") {
            var bypassReader = TableReader(bypass, file: file, context: "[profile.\(entry.key)] bypass", log: log)
            bypassExecutables = bypassReader.executables("executables") ?? []
            bypassDomains = bypassReader.domains("domains") ?? []
            bypassReader.reportUnknownKeys(unsupported: Policy.unsupportedListKeys)
        }
        let dnsServers = reader.addresses("dns") ?? []
        let allowEncryptedDNS = reader.bool("allow_encrypted_dns") ?? false
        var apps: [String] = []
        for (app, appAt) in reader.strings("apps") ?? [] {
            if validAppID(app) { apps.append(app) } else {
                log.error("[profile.\(entry.key)] apps: \"\(app)\" is not an application id (letters, digits, '.', '_' and '-', as in org.mozilla.firefox)", at: appAt)
            }
        }
        let trusted = reader.trustedRules("trusted")
        let onDemand = readOnDemand(&reader, tunnel: tunnel)
        reader.reportUnknownKeys(unsupported: Policy.unsupportedProfileKeys)
        return ProfileDraft(name: entry.key, location: reader.location, tunnel: tunnel,
                            access: Access(users: users, groups: groups, location: accessAt),
                            killswitch: killswitch, mark: mark, table: routingTable,
                            allowLAN: allowLAN, allowMulticast: allowMulticast, routeNetworks: routeNetworks,
                            bypassExecutables: bypassExecutables, routeExecutables: routeExecutables,
                            dnsServers: dnsServers, bypassDomains: bypassDomains, routeDomains: routeDomains, apps: apps,
                            allowEncryptedDNS: allowEncryptedDNS, trusted: trusted, via: via, servers: servers, onDemand: onDemand, reconnect: reconnect)
    }

    /// Desktop application ids (reverse DNS names, or plain names like "firefox").
    static func validAppID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 255 && id.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "_" || $0 == "-"
        }
    }

    private static func readTunnel(_ reader: inout TableReader, profile: String, via: inout Via?, servers: inout ServerList?) -> Tunnel? {
        let context = reader.context
        guard let table = reader.table("tunnel") else {
            if reader.keyLocation("tunnel") == nil {
                reader.log.error("\(context) has no tunnel; add e.g. tunnel.interface = \"wg0\"", at: reader.location)
            }
            return nil
        }
        var tunnelReader = TableReader(table, file: reader.file, context: "\(context) tunnel", log: reader.log)
        defer { tunnelReader.reportUnknownKeys() }
        via = readVia(&tunnelReader)
        let interface = tunnelReader.string("interface")
        if let (name, at) = interface, !validInterfaceName(name) {
            reader.log.error("\(context) tunnel.interface \"\(name)\" is not a valid interface name (1 to 15 characters, no '/', ':' or white space)", at: at)
            return nil
        }
        let listed = readServers(&tunnelReader, into: &servers)
        if case .some(nil) = listed { return nil }
        if let (config, at) = listed ?? tunnelReader.string("wireguard") {
            guard config.hasPrefix("/") else {
                reader.log.error("\(context) tunnel.wireguard \"\(config)\" must be an absolute path to a wg-quick style file", at: at)
                return nil
            }
            // The TUN interface vpnd creates: named by `interface`, else after the profile.
            let name = interface?.0 ?? String("vx-\(profile)".prefix(15))
            guard validInterfaceName(name) else {
                reader.log.error("\(context): the built-in tunnel needs an interface name; set tunnel.interface", at: at)
                return nil
            }
            return .wireguard(config: config, interface: name, location: at)
        }
        guard let (name, _) = interface else {
            if tunnelReader.keyLocation("interface") == nil && tunnelReader.keyLocation("wireguard") == nil {
                reader.log.error("\(context) tunnel needs `interface` (an existing tunnel interface such as \"wg0\") or `wireguard` (a wg-quick style file for the built-in engine)", at: tunnelReader.location)
            }
            return nil
        }
        return .interface(name)
    }

    static func validInterfaceName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 15 && name != "." && name != ".."
            && !name.contains { $0 == "/" || $0 == ":" || $0.isWhitespace || $0 == "\"" }
    }

    static func principal(_ item: NameOrNumber, at: SourceLocation, kind: String,
                                  lookup: (String) -> UInt32?, log: DiagnosticLog) -> Principal? {
        switch item {
        case let .number(number):
            guard let id = UInt32(exactly: number), id != UInt32.max else {
                log.error("\(number) is not a valid \(kind) id", at: at)
                return nil
            }
            return Principal(name: nil, id: id)
        case let .name(name):
            guard let id = lookup(name) else {
                log.error("unknown \(kind) \"\(name)\" (not in the \(kind == "user" ? "user" : "group") database)", at: at)
                return nil
            }
            return Principal(name: name, id: id)
        }
    }
}

extension RoutingSettings {
    static func read(_ reader: TableReader) -> RoutingSettings {
        var reader = reader
        var settings = RoutingSettings()
        settings.location = reader.location
        if let (mask, at) = reader.integer("mark_mask") {
            // Contiguous bits, at least two: index 0 means "not ours", the top one is bypass.
            if let mask = UInt32(exactly: mask), mask != 0,
               (mask >> UInt32(mask.trailingZeroBitCount)) & ((mask >> UInt32(mask.trailingZeroBitCount)) + 1) == 0,
               mask.nonzeroBitCount >= 2 {
                settings.markMask = mask
            } else {
                reader.log.error("[routing] mark_mask \(mask) must be one run of at least 2 contiguous bits, e.g. 0x7f000000", at: at)
            }
        }
        if let (base, at) = reader.integer("table_base") {
            if let base = UInt32(exactly: base), base > 255, base < UInt32.max - 4096 {
                settings.tableBase = base
            } else {
                reader.log.error("[routing] table_base \(base) must be between 256 and 4294963199", at: at)
            }
        }
        if let (priority, at) = reader.integer("rule_priority") {
            // Below 32766, where the main table's rule sits; 0 is the local table's.
            if let priority = UInt32(exactly: priority), (1...32765).contains(priority) {
                settings.rulePriority = priority
            } else {
                reader.log.error("[routing] rule_priority \(priority) must be between 1 and 32765 (before the main table's rule)", at: at)
            }
        }
        reader.reportUnknownKeys()
        return settings
    }
}

/// `[system]` as read: the settings and where its profile was named.
struct SystemDraft {
    var settings = SystemSettings()
    var profileLocation: SourceLocation?
    var profile: String? { settings.profile }
    var location: SourceLocation? { settings.location }
}

extension SystemSettings {
    static func read(_ reader: TableReader, resolver: NameResolver) -> SystemDraft {
        var reader = reader
        var draft = SystemDraft()
        draft.settings.location = reader.location
        if let (name, at) = reader.string("profile") {
            draft.settings.profile = name
            draft.profileLocation = at
        }
        if let table = reader.table("bypass") {
            var bypass = TableReader(table, file: reader.file, context: "[system] bypass", log: reader.log)
            let users = (bypass.namesOrNumbers("users") ?? []).compactMap {
                ProfileDraft.principal($0.0, at: $0.1, kind: "user", lookup: resolver.uid(ofUser:), log: reader.log)
            }
            let groups = (bypass.namesOrNumbers("groups") ?? []).compactMap {
                ProfileDraft.principal($0.0, at: $0.1, kind: "group", lookup: resolver.gid(ofGroup:), log: reader.log)
            }
            draft.settings.bypass = Access(users: users, groups: groups,
                                           location: bypass.keyLocation("users") ?? bypass.keyLocation("groups") ?? bypass.location)
            bypass.reportUnknownKeys()
        }
        reader.reportUnknownKeys()
        return draft
    }
}

extension DNSSettings {
    static func read(_ reader: TableReader) -> DNSSettings {
        var reader = reader
        var settings = DNSSettings()
        settings.location = reader.location
        if let (value, at) = reader.integer("min_ttl") {
            if let value = UInt32(exactly: value), (1...86_400).contains(value) { settings.minTTL = value } else {
                reader.log.error("[dns] min_ttl \(value) must be 1 to 86400 seconds", at: at)
            }
        }
        if let (value, at) = reader.integer("max_ttl") {
            if let value = UInt32(exactly: value), (1...604_800).contains(value) { settings.maxTTL = value } else {
                reader.log.error("[dns] max_ttl \(value) must be 1 to 604800 seconds", at: at)
            }
        }
        if settings.maxTTL < settings.minTTL, let at = reader.keyLocation("max_ttl") ?? reader.keyLocation("min_ttl") {
            reader.log.error("[dns] max_ttl \(settings.maxTTL) is below min_ttl \(settings.minTTL)", at: at)
        }
        if let (value, at) = reader.integer("port_base") {
            if let value = UInt16(exactly: value), (1024...65000).contains(value) { settings.portBase = value } else {
                reader.log.error("[dns] port_base \(value) must be 1024 to 65000 (profile i listens on port_base + i)", at: at)
            }
        }
        reader.reportUnknownKeys()
        return settings
    }
}
