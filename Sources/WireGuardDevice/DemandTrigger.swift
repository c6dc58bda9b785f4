import Addresses

/// Which packets bring a tunnel that is down on demand up: those the engine would send to a
/// peer (the destination is in a peer's AllowedIPs), unicast. The kernel's own chatter on a
/// fresh interface (IPv6 router solicitations and MLD reports to ff02::, link-local
/// destinations, broadcasts) is for nobody behind the server and must not wake it.
enum DemandTrigger {
    /// The destination address of an IPv4 or IPv6 packet.
    static func destination(of packet: UnsafeRawBufferPointer) -> IPAddress? {
        guard let first = packet.first else { return nil }
        switch first >> 4 {
        case 4 where packet.count >= 20: return IPAddress(bytes: packet[16..<20])
        case 6 where packet.count >= 40: return IPAddress(bytes: packet[24..<40])
        default: return nil
        }
    }

    static let neverTriggers = ["224.0.0.0/4", "255.255.255.255/32", "169.254.0.0/16", "0.0.0.0/8", "ff00::/8", "fe80::/10", "::/128"]
        .compactMap { IPPrefix($0) }

    static func triggers(_ destination: IPAddress, allowedIPs: [IPPrefix]) -> Bool {
        !neverTriggers.contains { $0.contains(destination) } && allowedIPs.contains { $0.contains(destination) }
    }
}
