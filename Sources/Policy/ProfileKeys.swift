/// One row of the `[profile.NAME]` key table: the key (or keys read together), how it is
/// read and where in the draft it goes. Rows run in the table's order on every profile,
/// whether or not the key is written (a missing tunnel is an error, a missing flag keeps
/// its default), each seeing the draft as read so far: `reconnect` and `on_demand` look at
/// the tunnel, `allow_multicast` at `allow_lan`.
struct ProfileKey {
    /// The keys the row reads, as a policy writes them: what a reader of the table looks for.
    let keys: [String]
    let read: (inout TableReader, inout ProfileDraft, NameResolver) -> Void

    init(_ keys: String..., read: @escaping (inout TableReader, inout ProfileDraft, NameResolver) -> Void) {
        self.keys = keys
        self.read = read
    }

    /// true or false; absent, the draft's default stays.
    static func flag(_ key: String, _ field: WritableKeyPath<ProfileDraft, Bool>) -> ProfileKey {
        ProfileKey(key) { reader, draft, _ in
            if let value = reader.bool(key) { draft[keyPath: field] = value }
        }
    }

    /// A list whose items keep where each was written (for messages about them later).
    static func list<Item>(_ key: String, _ field: WritableKeyPath<ProfileDraft, [(Item, SourceLocation)]>,
                           _ items: @escaping (inout TableReader, String) -> [(Item, SourceLocation)]?) -> ProfileKey {
        ProfileKey(key) { reader, draft, _ in draft[keyPath: field] = items(&reader, key) ?? [] }
    }

    /// A table of its own keys (`route`, `bypass`), whose unknown keys are reported there.
    static func table(_ key: String, _ rows: [ProfileKey]) -> ProfileKey {
        ProfileKey(key) { reader, draft, resolver in
            guard let table = reader.table(key) else { return }
            var inner = TableReader(table, file: reader.file, context: "\(reader.context) \(key)", log: reader.log)
            for row in rows { row.read(&inner, &draft, resolver) }
            inner.reportUnknownKeys(unsupported: Policy.unsupportedListKeys)
        }
    }
}

extension ProfileDraft {
    /// Every key of `[profile.NAME]`, in the order they are read (and their messages given).
    static var keys: [ProfileKey] {
        [
            ProfileKey("tunnel") { reader, draft, _ in
                draft.tunnel = readTunnel(&reader, profile: draft.name, via: &draft.via, servers: &draft.servers)
            },
            ProfileKey("reconnect") { reader, draft, _ in draft.reconnect = readReconnect(&reader, tunnel: draft.tunnel) },
            ProfileKey("users", "groups") { reader, draft, resolver in draft.access = reader.access(resolver: resolver) },
            .flag("killswitch", \.killswitch),
            ProfileKey("mark") { reader, draft, _ in draft.mark = reader.integer("mark", as: UInt32.self, else: "is not a 32-bit value") },
            // 0 is "unspecified"; 253-255 are the kernel's default, main and local tables.
            ProfileKey("table") { reader, draft, _ in
                draft.table = reader.integer("table", as: UInt32.self, where: { $0 != 0 && !(253...255).contains($0) },
                                             else: "must be a routing table id from 1 to 4294967295 other than 253, 254 and 255 (default, main, local)")
            },
            .flag("allow_lan", \.allowLAN),
            ProfileKey("allow_multicast") { reader, draft, _ in
                draft.allowMulticast = reader.bool("allow_multicast") ?? false
                if draft.allowMulticast && !draft.allowLAN, let at = reader.keyLocation("allow_multicast") {
                    reader.log.error("\(reader.context) allow_multicast needs allow_lan = true (multicast is part of reaching the LAN)", at: at)
                }
            },
            .table("route", [
                .list("networks", \.routeNetworks) { $0.prefixes($1) },
                .list("executables", \.routeExecutables) { $0.executables($1) },
                .list("domains", \.routeDomains) { $0.domains($1) },
            ]),
            .table("forward", [
                .list("interfaces", \.forwardInterfaces) { $0.interfaceNames($1) },
            ]),
            .table("bypass", [
                .list("executables", \.bypassExecutables) { $0.executables($1) },
                .list("domains", \.bypassDomains) { $0.domains($1) },
            ]),
            ProfileKey("dns") { reader, draft, _ in draft.dnsServers = reader.addresses("dns") ?? [] },
            .flag("allow_encrypted_dns", \.allowEncryptedDNS),
            ProfileKey("apps") { reader, draft, _ in
                for (app, at) in reader.strings("apps") ?? [] {
                    if validAppID(app) { draft.apps.append(app) } else {
                        reader.log.error("\(reader.context) apps: \"\(app)\" is not an application id (letters, digits, '.', '_' and '-', as in org.mozilla.firefox)", at: at)
                    }
                }
            },
            ProfileKey("trusted") { reader, draft, _ in draft.trusted = reader.trustedRules("trusted") },
            ProfileKey("on_demand", "idle") { reader, draft, _ in draft.onDemand = readOnDemand(&reader, tunnel: draft.tunnel) },
        ]
    }
}
