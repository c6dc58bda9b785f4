import Nftables
import Policy

/// Multihop (`tunnel.via`): the exit's encrypted transport enters the entry's tunnel.
/// - Its socket carries the entry profile's mark (SO_MARK), not the bypass mark: the
///   kernel routes it by the entry's table into the entry's tunnel from its first packet,
///   as a member's, and the entry's killswitch holds it.
/// - Its port is not in the transport set that goes direct (TransportRules).
/// - It never enters its own tunnel: the exit's loop guard stays (its port and server).
/// - While the entry is down it is held: the entry's table ends in an unreachable default
///   (the entry's killswitch, which the policy requires), and its egress chain drops what
///   would leave elsewhere. Nothing of it can leave on the physical link.
/// Status counts it apart from the entry's members (`hop_<exit>`), first in the entry's
/// egress chain; an exit held by a trusted network (HopHold) is dropped there.
public enum MultihopRules {
    /// The mark a built-in tunnel's socket carries: the entry's mark for an exit hop, else
    /// the file's FwMark, else the bypass mark (no profile routes it).
    public static func socketMark(_ profile: Profile, in policy: Policy, fileMark: UInt32?) -> UInt32 {
        if let via = profile.via, let entry = policy.profile(named: via.entry) {
            return entry.mark.value
        }
        return fileMark ?? policy.routing.bypassMark
    }

    /// An exit hop's packets travel inside the entry's: 80 bytes less (the entry's outer
    /// IPv6 and UDP headers and WireGuard's 32) than the usual 1420 unless the file sets MTU.
    public static let exitMTU: UInt32 = 1340

    static func add(_ policy: Policy, facts: RuntimeFacts, to table: inout NftTable) {
        for profile in policy.profiles {
            guard let via = profile.via, let entry = policy.profile(named: via.entry) else { continue }
            let names = ProfileObjectNames(profile.name)
            let port = facts.tunnelTransports[profile.tunnel.interfaceName]?.udpPort
            table.sets.append(NftSet(name: names.hopSet, key: .port, elements: port.map { [NftElement(key: .port($0))] } ?? [],
                                     comment: "profile \(profile.name): the UDP port of \(profile.tunnel.interfaceName)'s transport, carried by profile \(entry.name)"))
            table.counters += [
                NftCounter(name: names.hopCounter, comment: "profile \(profile.name): packets of its transport sent into \(entry.tunnel.interfaceName)"),
                NftCounter(name: names.hopHeldCounter, comment: "profile \(profile.name): packets of its transport dropped while held"),
            ]
        }
    }

    /// First in the entry's egress chain: each exit through it, counted, or dropped while
    /// held (HopHold: the entry's emptied table would otherwise send it direct).
    static func egress(_ entry: Profile, policy: Policy, facts: RuntimeFacts) -> [NftRule] {
        policy.profiles.filter { $0.via?.entry == entry.name }.map { exit in
            let names = ProfileObjectNames(exit.name)
            let match: [NftStatement] = [.sourcePortInSet(.udp, set: names.hopSet), .socketUserInSet(TransportRules.ownersSet)]
            return facts.hopHeld(exit, in: policy)
                ? NftRule(match + [.namedCounter(names.hopHeldCounter), .verdict(.drop)],
                          comment: "profile \(exit.name) via \(entry.name): held, \(entry.name) or a hop beyond it does not connect")
                : NftRule(match + [.namedCounter(names.hopCounter)], comment: "profile \(exit.name) via \(entry.name): into \(entry.tunnel.interfaceName)")
        }
    }
}

extension ProfileObjectNames {
    /// An exit hop's transport port, and its counters.
    public var hopSet: String { "hop_udp_\(profile)" }
    public var hopCounter: String { "\(profile)_hop" }
    public var hopHeldCounter: String { "\(profile)_hop_held" }
}
