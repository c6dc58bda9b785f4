import Control
import Nftables
import Plan
import Policy
import Routing

extension Daemon {
    /// Multihop: the entry that carries a profile's transport, its tunnel's state and what
    /// route_output sent into it (MultihopRules' counter).
    func hopStatus(_ profile: Profile, links: [Link], counters: [String: NftCounter]) -> HopStatus? {
        guard let via = profile.via else { return nil }
        let entryInterface = policy.profile(named: via.entry)?.tunnel.interfaceName ?? via.entry
        let counter = counters[ProfileObjectNames(profile.name).hopCounter]
        return HopStatus(entry: via.entry, entryInterface: entryInterface,
                         entryState: Self.tunnelState(links.first { $0.name == entryInterface }),
                         carried: Traffic(packets: counter?.packets ?? 0, bytes: counter?.bytes ?? 0))
    }
}
