/// "The network changed" for a tunnel: a pure comparison of before and after. A peer first
/// seen (no before) is no change: a tunnel that has just started needs no second
/// handshake. Any difference in a peer's uplink is one: another interface or gateway (the
/// laptop moved from Ethernet to Wi-Fi, or to another Wi-Fi), another address (DHCP gave a
/// new one), a route that came back (offline -> online).
public enum UplinkChange {
    public static func changed<Key: Hashable>(before: [Key: Uplink], after: [Key: Uplink]) -> Bool {
        after.contains { key, now in before[key].map { $0 != now } ?? false }
    }
}
