import Addresses

/// What a built-in tunnel's UDP rides on toward one peer: the interface the kernel sends it
/// by, the gateway, the source address, and that interface's addresses. nil interface: no
/// route at all (the host is offline).
struct Uplink: Hashable, Sendable {
    var interfaceIndex: Int32?
    var gateway: IPAddress?
    var source: IPAddress?
    /// The interface's addresses, sorted (an address added or taken counts as a change).
    var addresses: [IPAddress]

    static let offline = Uplink(interfaceIndex: nil, gateway: nil, source: nil, addresses: [])
}

/// "The network changed" for a tunnel: a pure comparison of before and after. A peer first
/// seen (no before) is no change: a tunnel that has just started needs no second
/// handshake. Any difference in a peer's uplink is one: another interface or gateway (the
/// laptop moved from Ethernet to Wi-Fi, or to another Wi-Fi), another address (DHCP gave a
/// new one), a route that came back (offline -> online).
enum UplinkChange {
    static func changed<Key: Hashable>(before: [Key: Uplink], after: [Key: Uplink]) -> Bool {
        after.contains { key, now in before[key].map { $0 != now } ?? false }
    }
}
