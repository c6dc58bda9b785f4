/// Multihop (`tunnel.via = "entry"`): a built-in tunnel whose encrypted transport goes
/// through another profile's tunnel, so its server (the exit) never sees the host's address
/// and the entry's server sees only encrypted UDP to the exit. Chains of more hops follow
/// from the same rule (each hop's transport carried by the next).
public struct Via: Hashable, Sendable {
    /// The profile whose tunnel carries this profile's transport.
    public var entry: String
    /// Where `tunnel.via` was written.
    public var location: SourceLocation

    public init(entry: String, location: SourceLocation) {
        self.entry = entry
        self.location = location
    }
}

extension ProfileDraft {
    static func readVia(_ reader: inout TableReader) -> Via? {
        guard let (entry, at) = reader.string("via") else { return nil }
        return Via(entry: entry, location: at)
    }
}

extension Policy {
    /// The hops must lead somewhere: to a profile that exists, without coming back, from a
    /// tunnel whose socket vpnd owns (only the built-in engine's socket gets the entry's
    /// mark), into a profile whose killswitch holds the transport while the entry is down
    /// (its table's unreachable default: without it the exit's transport would go direct).
    static func checkVia(_ profiles: [Profile], log: DiagnosticLog) {
        let byName = Dictionary(profiles.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for profile in profiles {
            guard let via = profile.via else { continue }
            guard profile.tunnel.isBuiltIn else {
                log.error("profile \"\(profile.name)\": tunnel.via needs the built-in tunnel (tunnel.wireguard): vpnd marks only its own engine's socket; for \(profile.tunnel.interfaceName) set its daemon's fwmark to profile \"\(via.entry)\"'s mark instead", at: via.location)
                continue
            }
            guard let entry = byName[via.entry] else {
                log.error("profile \"\(profile.name)\": tunnel.via \"\(via.entry)\" names no profile", at: via.location)
                continue
            }
            guard entry.killswitch else {
                log.error("profile \"\(profile.name)\": tunnel.via \"\(entry.name)\" needs killswitch = true in profile \"\(entry.name)\": it holds this tunnel's transport while \(entry.tunnel.interfaceName) is down, which would otherwise go direct", at: via.location)
                continue
            }
            var path = [profile.name]
            var next: Profile? = entry
            while let hop = next {
                path.append(hop.name)
                if hop.name == profile.name {
                    log.error("profile \"\(profile.name)\": tunnel.via makes a cycle (\(path.joined(separator: " -> "))): the first hop must reach its server directly", at: via.location)
                    break
                }
                // A cycle that this profile only leads into is reported at its members.
                if path.dropLast().contains(hop.name) { break }
                next = hop.via.flatMap { byName[$0.entry] }
            }
        }
    }
}
