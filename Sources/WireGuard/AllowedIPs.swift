import Addresses

/// Cryptokey routing: a binary prefix trie per address family mapping prefixes to peers,
/// longest prefix wins. Nodes live in one flat array (indices, no references), so a
/// lookup on the data path touches no reference counts. Removing a prefix clears its node;
/// emptied nodes stay until the next full rebuild (when they outnumber the live ones).
struct AllowedIPs {
    private struct Node {
        var zero: Int32 = -1
        var one: Int32 = -1
        var peer: Int32 = -1
    }

    private(set) var table: [IPPrefix: Int] = [:]
    private var byPeer: [Int: Set<IPPrefix>] = [:]
    private var v4: [Node] = [Node()]
    private var v6: [Node] = [Node()]

    /// Routes `prefix` to `peer`, taking it from any other peer.
    mutating func insert(_ prefix: IPPrefix, peer: Int) {
        let network = prefix.network
        if let previous = table[network] { byPeer[previous]?.remove(network) }
        table[network] = peer
        byPeer[peer, default: []].insert(network)
        if network.isIPv4 { Self.add(&v4, network.address.bytes, network.length, Int32(peer)) } else { Self.add(&v6, network.address.bytes, network.length, Int32(peer)) }
    }

    /// Unroutes `prefix` if it routes to `peer` (another peer's prefix stays theirs).
    mutating func remove(_ prefix: IPPrefix, peer: Int) {
        let network = prefix.network
        guard table[network] == peer else { return }
        table[network] = nil
        byPeer[peer]?.remove(network)
        if network.isIPv4 { Self.add(&v4, network.address.bytes, network.length, -1) } else { Self.add(&v6, network.address.bytes, network.length, -1) }
    }

    mutating func removeAll(peer: Int) {
        let gone = byPeer.removeValue(forKey: peer) ?? []
        for prefix in gone {
            table[prefix] = nil
            if prefix.isIPv4 { Self.add(&v4, prefix.address.bytes, prefix.length, -1) } else { Self.add(&v6, prefix.address.bytes, prefix.length, -1) }
        }
        if v4.count + v6.count > 64 * (table.count + 1) { rebuild() }
    }

    func prefixes(of peer: Int) -> [IPPrefix] {
        (byPeer[peer] ?? []).sorted { ($0.isIPv4 ? 0 : 1, $0.address, $0.length) < ($1.isIPv4 ? 0 : 1, $1.address, $1.length) }
    }

    private mutating func rebuild() {
        v4 = [Node()]
        v6 = [Node()]
        for (prefix, peer) in table {
            let bytes = prefix.address.bytes
            if prefix.isIPv4 { Self.add(&v4, bytes, prefix.length, Int32(peer)) } else { Self.add(&v6, bytes, prefix.length, Int32(peer)) }
        }
    }

    private static func add(_ nodes: inout [Node], _ bytes: [UInt8], _ length: Int, _ peer: Int32) {
        var at = 0
        for bit in 0..<length {
            let one = bytes[bit >> 3] & (0x80 >> UInt8(bit & 7)) != 0
            let next = one ? nodes[at].one : nodes[at].zero
            if next >= 0 {
                at = Int(next)
            } else {
                nodes.append(Node())
                let created = Int32(nodes.count - 1)
                if one { nodes[at].one = created } else { nodes[at].zero = created }
                at = Int(created)
            }
        }
        nodes[at].peer = peer
    }

    /// The peer for an address given as raw network-order bytes (4 or 16).
    @inline(__always)
    func lookup(_ address: UnsafeRawBufferPointer) -> Int? {
        let nodes = address.count == 4 ? v4 : v6
        return nodes.withUnsafeBufferPointer { n in
            var at = 0
            var best: Int32 = n[0].peer
            for bit in 0..<(address.count * 8) {
                let one = address[bit >> 3] & (0x80 >> UInt8(bit & 7)) != 0
                let next = one ? n[at].one : n[at].zero
                if next < 0 { break }
                at = Int(next)
                if n[at].peer >= 0 { best = n[at].peer }
            }
            return best >= 0 ? Int(best) : nil
        }
    }

    func lookup(_ address: IPAddress) -> Int? {
        address.bytes.withUnsafeBytes { lookup($0) }
    }
}
