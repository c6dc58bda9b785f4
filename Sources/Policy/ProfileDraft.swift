import Addresses
import DomainNames
import TOML

/// A profile as read, before marks and tables are assigned. What a key does not set keeps
/// the value here (its default).
struct ProfileDraft {
    var name: String
    var location: SourceLocation
    var tunnel: Tunnel?
    var access: Access
    var killswitch = true
    var mark: (UInt32, SourceLocation)?
    var table: (UInt32, SourceLocation)?
    var allowLAN = false
    var allowMulticast = false
    var routeNetworks: [(IPPrefix, SourceLocation)] = []
    var forwardInterfaces: [(String, SourceLocation)] = []
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

    /// `[profile.NAME]`: its name checked, then its keys read in the order of `keys`, then
    /// every key no row asked for reported.
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
        var draft = ProfileDraft(name: entry.key, location: reader.location, access: Access(users: [], groups: [], location: reader.location))
        for key in keys { key.read(&reader, &draft, resolver) }
        reader.reportUnknownKeys(unsupported: Policy.unsupportedProfileKeys)
        return draft
    }

    /// Desktop application ids (reverse DNS names, or plain names like "firefox").
    static func validAppID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 255 && id.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "." || $0 == "_" || $0 == "-"
        }
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

extension TableReader {
    /// `users` and `groups` (a profile's, `[system] bypass`): who may, located where `users`
    /// (else `groups`, else the table) was written, for the refusal message.
    mutating func access(resolver: NameResolver) -> Access {
        let users = (namesOrNumbers("users") ?? []).compactMap {
            ProfileDraft.principal($0.0, at: $0.1, kind: "user", lookup: resolver.uid(ofUser:), log: log)
        }
        let groups = (namesOrNumbers("groups") ?? []).compactMap {
            ProfileDraft.principal($0.0, at: $0.1, kind: "group", lookup: resolver.gid(ofGroup:), log: log)
        }
        return Access(users: users, groups: groups, location: keyLocation("users") ?? keyLocation("groups") ?? self.location)
    }
}
