import Addresses
import DomainNames
import Monotonic

/// An address the proxy answered for a bypassed name and, within both answers' lifetimes,
/// for a name that is not bypassed: a CDN or a shared host serving both. The ruleset keeps
/// it in the tunnel (the set of addresses of names not bypassed is checked before the
/// bypass set), so the bypassed name's connections go through the tunnel for as long as
/// both answers live.
public struct DNSSharedAddress: Hashable, Sendable {
    public var address: IPAddress
    public var bypassed: DomainName
    public var tunneled: DomainName
    /// When one of the two answers' set elements expires, and with it the collision.
    public var until: MonotonicInstant
}

/// Which names a profile's proxy answered with each address, on each side of its bypass
/// list, for the collision count and the names `vpnctl status` shows. It decides nothing:
/// the kernel's sets do, whatever this table holds, so when it is full it misses
/// collisions but no packet goes another way. Mirrors the sets' lifetimes: an address's
/// entry lives as long as the longest answer that put it there (the element's timeout is
/// never shortened, see `DNSElementLifetimes`).
struct SharedAddresses {
    private struct Holder {
        var name: DomainName
        var expires: MonotonicInstant
    }

    /// Entries per side; a full side first drops what has expired, then stops remembering.
    static let capacity = 16_384
    /// Collisions shown (the most recent live ones).
    static let shown = 16

    private var bypassed: [IPAddress: Holder] = [:]
    private var tunneled: [IPAddress: Holder] = [:]
    /// A side found full with nothing expired stays full at least until its first entry
    /// expires: no new address is taken (and the table is not walked again) before then.
    private var bypassedFullUntil: MonotonicInstant?
    private var tunneledFullUntil: MonotonicInstant?
    private var recent: [DNSSharedAddress] = []
    /// Collisions that began: an address came to be held by a bypassed and a tunneled name
    /// (a pair that was already colliding and is answered again does not count again).
    private(set) var count: UInt64 = 0

    /// The proxy answered `name` (bypassed or not) with `address`, its set element living
    /// until `expires`.
    mutating func answered(_ address: IPAddress, name: DomainName, bypassed isBypassed: Bool, until expires: MonotonicInstant, now: MonotonicInstant) {
        let previous = (isBypassed ? bypassed : tunneled)[address].flatMap { $0.expires > now ? $0 : nil }
        let holder = Holder(name: name, expires: max(previous?.expires ?? expires, expires))
        guard store(holder, for: address, bypassed: isBypassed, now: now) else { return }
        guard let other = (isBypassed ? tunneled : bypassed)[address], other.expires > now else { return }
        let collision = DNSSharedAddress(address: address, bypassed: isBypassed ? name : other.name, tunneled: isBypassed ? other.name : name,
                                         until: min(holder.expires, other.expires))
        // The same pair answered again: the collision goes on (its end may move).
        let continuing = previous?.name == name
        recent.removeAll { $0.address == address || $0.until <= now }
        recent.insert(collision, at: 0)
        if recent.count > Self.shown { recent.removeLast(recent.count - Self.shown) }
        if !continuing { count += 1 }
    }

    /// The live collisions, most recent first, at most `shown`.
    func collisions(now: MonotonicInstant) -> [DNSSharedAddress] {
        recent.filter { $0.until > now }
    }

    private mutating func store(_ holder: Holder, for address: IPAddress, bypassed isBypassed: Bool, now: MonotonicInstant) -> Bool {
        func put(_ side: inout [IPAddress: Holder], _ fullUntil: inout MonotonicInstant?) -> Bool {
            if side[address] == nil, side.count >= Self.capacity {
                if let until = fullUntil, now < until { return false }
                side = side.filter { $0.value.expires > now }
                guard side.count < Self.capacity else {
                    fullUntil = side.values.map(\.expires).min()
                    return false
                }
                fullUntil = nil
            }
            side[address] = holder
            return true
        }
        return isBypassed ? put(&bypassed, &bypassedFullUntil) : put(&tunneled, &tunneledFullUntil)
    }
}
