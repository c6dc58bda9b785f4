/// The top-level tables besides the profiles: `[routing]`, `[dns]` and `[system]`, each set
/// in one file only.
extension TableReader {
    /// `[key]` read with `read`, unless a file before set it (`first`: where): then an error
    /// here and nil.
    mutating func section<Settings>(_ key: String, setAt first: SourceLocation?, read: (TableReader) -> Settings) -> Settings? {
        guard let inner = self.table(key) else { return nil }
        let reader = TableReader(inner, file: file, context: "[\(key)]", log: log)
        if let first {
            log.error("[\(key)] is set again (first at \(first)); set it in one file only", at: reader.location)
            return nil
        }
        return read(reader)
    }
}

extension RoutingSettings {
    static func read(_ reader: TableReader) -> RoutingSettings {
        var reader = reader
        var settings = RoutingSettings()
        settings.location = reader.location
        // Contiguous bits, at least two: index 0 means "not ours", the top one is bypass.
        let contiguous = { (mask: UInt32) in
            mask != 0 && (mask >> UInt32(mask.trailingZeroBitCount)) & ((mask >> UInt32(mask.trailingZeroBitCount)) + 1) == 0 && mask.nonzeroBitCount >= 2
        }
        if let (mask, _) = reader.integer("mark_mask", as: UInt32.self, where: contiguous,
                                          else: "must be one run of at least 2 contiguous bits, e.g. 0x7f000000") {
            settings.markMask = mask
        }
        if let (base, _) = reader.integer("table_base", as: UInt32.self, where: { $0 > 255 && $0 < UInt32.max - 4096 },
                                          else: "must be between 256 and 4294963198") {
            settings.tableBase = base
        }
        // vpnexec's rules take rule_priority - 1 to rule_priority + 5, between the local
        // table's rule (which DNS routing moves from 0 to 3) and the main table's (32766).
        if let (priority, _) = reader.integer("rule_priority", as: UInt32.self, where: { (5...32760).contains($0) },
                                              else: "must be between 5 and 32760 (vpnexec's rules take 0 to 3, and rule_priority - 1 to rule_priority + 5, before the main table's rule at 32766)") {
            settings.rulePriority = priority
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
            draft.settings.bypass = bypass.access(resolver: resolver)
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
        if let (value, _) = reader.integer("min_ttl", as: UInt32.self, where: { (1...86_400).contains($0) }, else: "must be 1 to 86400 seconds") {
            settings.minTTL = value
        }
        if let (value, _) = reader.integer("max_ttl", as: UInt32.self, where: { (1...604_800).contains($0) }, else: "must be 1 to 604800 seconds") {
            settings.maxTTL = value
        }
        if settings.maxTTL < settings.minTTL, let at = reader.keyLocation("max_ttl") ?? reader.keyLocation("min_ttl") {
            reader.log.error("[dns] max_ttl \(settings.maxTTL) is below min_ttl \(settings.minTTL)", at: at)
        }
        // Gone with the proxies' own ports: a member's TCP queries were sent there, where any
        // local user could listen while vpnd did not.
        reader.reportUnknownKeys(unsupported: ["port_base": "no longer a setting: members' DNS queries, UDP and TCP, reach their profile's proxy by routing, on no port of its own; remove the line"])
        return settings
    }
}
