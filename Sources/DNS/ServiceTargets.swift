import DomainNames
import Monotonic

/// Names a listed name's HTTPS or SVCB record sends the client to: the TargetName of a
/// ServiceMode record (`bank.example HTTPS 1 edge.provider.example`) or an AliasMode one
/// (`bank.example HTTPS 0 pool.provider.example`). A browser then asks for the target's
/// addresses and connects there, a name that may be in no list; until the record it came
/// from expires, that name counts for the lists of the name it serves, as a CNAME target
/// does within one answer.
struct ServiceTargets {
    struct Entry {
        var lists: DomainList.Membership
        var expires: MonotonicInstant
    }

    /// A bound on what a resolver's answers can make the proxy hold.
    static let capacity = 4096

    private var entries: [DomainName: Entry] = [:]

    var isEmpty: Bool { entries.isEmpty }

    /// `target` counts for `lists` until `expires` (joined with what it counted for already,
    /// for as long as the later of the two). A full table first drops what has expired; if
    /// it is still full, the target is not remembered.
    mutating func remember(_ target: DomainName, lists: DomainList.Membership, until expires: MonotonicInstant, now: MonotonicInstant) {
        if var entry = entries[target] {
            entry.lists.formUnion(lists)
            entry.expires = max(entry.expires, expires)
            entries[target] = entry
            return
        }
        if entries.count >= Self.capacity { entries = entries.filter { $0.value.expires > now } }
        guard entries.count < Self.capacity else { return }
        entries[target] = Entry(lists: lists, expires: expires)
    }

    /// The lists `name` counts for as a remembered target, none once its record expired.
    func lists(of name: DomainName, now: MonotonicInstant) -> DomainList.Membership {
        guard let entry = entries[name], entry.expires > now else { return [] }
        return entry.lists
    }
}
