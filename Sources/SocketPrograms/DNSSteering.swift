import Addresses
import BPF

/// DNS by routing, its kernel end: a member's query to port 53, UDP or TCP, is routed into
/// local delivery on `lo` with a source address that names its profile (127.77.0.0/16 for
/// IPv4, fd7f:4d::/112 for IPv6), and a network-namespace `sk_lookup` program hands it to
/// the proxy socket of its family and transport, whatever address it asked: a datagram to
/// the UDP socket, a SYN to the TCP listener (whose connection then has the address asked
/// as its own). The proxy answers from the address asked (transparent sockets; for UDP the
/// packet-info control message), so the member sees its own server answer.
///
/// A profile is a key in 1...65534, its source addresses 127.77.(key >> 8).(key & 255) and
/// fd7f:4d::key, and its proxy sockets sit in four SOCKMAPs, one a family and transport, at
/// that key (`DNSSteeringLink` in Cgroups). The first and last addresses of each prefix name no
/// profile: a query from them is dropped like one whose proxy is gone. 127.0.0.0/8 is
/// local on `lo` by itself; an IPv6 source must be an address of the host, so vpnd puts
/// each served profile's on `lo` (DNSRouting).
public enum DNSSteering {
    /// The profiles' source addresses: any query from here to port 53 on `lo` is ours.
    public static let prefix = IPPrefix(address: .v4(network), length: 16)!
    public static let prefix6 = IPPrefix(address: .v6(network6, 0), length: 112)!

    public static func prefix(ipv6: Bool) -> IPPrefix { ipv6 ? prefix6 : prefix }

    public static let keys: ClosedRange<UInt32> = 1...65534

    /// 127.77.0.0, host order.
    static let network: UInt32 = 0x7f4d_0000
    /// The upper half of fd7f:4d::, whose lower half is the key (a ULA prefix: 0x7f, 0x4d
    /// as in 127.77).
    static let network6: UInt64 = 0xfd7f_004d_0000_0000

    /// The source address of the profile `key` (in `keys`).
    public static func address(of key: UInt32, ipv6: Bool = false) -> IPAddress {
        precondition(keys.contains(key), "a DNS steering key is in 1...65534, not \(key)")
        return ipv6 ? .v6(network6, UInt64(key)) : .v4(network | key)
    }

    /// The profile an address names; nil for an address outside the prefixes, their first
    /// or their last.
    public static func key(of address: IPAddress) -> UInt32? {
        let key: UInt32
        switch address {
        case let .v4(value):
            guard value & 0xffff_0000 == network else { return nil }
            key = value & 0xffff
        case let .v6(high, low):
            guard high == network6, low >> 16 == 0 else { return nil }
            key = UInt32(low)
        }
        return keys.contains(key) ? key : nil
    }

    /// What the program computes from `remote_ip4`: that field holds the address in network
    /// order, which a 32-bit load reads on a little-endian machine as its bytes reversed
    /// (127.77.1.2 reads as 0x02014d7f). Turned back into the address's value, the low 16
    /// bits are the key, stored as a host-order u32 as the map's key. Nil: not from
    /// `prefix` (the program passes it untouched).
    static func mapKey(remoteIPv4 word: UInt32) -> UInt32? {
        let value = UInt32(bigEndian: word)
        return value >> 16 == network >> 16 ? value & 0xffff : nil
    }

    /// The same from the four words of `remote_ip6`, each read as `remoteIPv4` is.
    static func mapKey(remoteIPv6 words: [UInt32]) -> UInt32? {
        guard words.count == 4, Array(words[0..<3]) == network6Words else { return nil }
        let last = UInt32(bigEndian: words[3])
        return last >> 16 == 0 ? last : nil
    }

    /// fd7f:4d::/96's three words as the program reads them from `remote_ip6`.
    static var network6Words: [UInt32] {
        IPAddress.v6(network6, 0).bytes.withUnsafeBytes { bytes in (0..<3).map { bytes.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self) } }
    }

    /// BPF_PROG_TYPE_SK_LOOKUP, attached as BPF_SK_LOOKUP to a network namespace.
    public static let programType: UInt32 = 30
    public static let attachType: UInt32 = 36
    /// The kernel's name for the program (at most 15 characters), as bpftool lists it.
    public static let programName = "vx_dnssteer"

    /// The SOCKMAPs (one a family and transport): key a u32 index (the profile's key), value
    /// the socket's descriptor as a u64 when written (the kernel keeps the socket, not the
    /// number).
    public static let mapType: UInt32 = 15
    public static func mapName(ipv6: Bool, tcp: Bool = false) -> String { "vx_dns\(tcp ? "tcp" : "udp")\(ipv6 ? 6 : 4)" }
    public static let keySize: UInt32 = 4, valueSize: UInt32 = 8

    /// Context offsets (uapi struct bpf_sk_lookup; Tests check them against the header).
    enum Context {
        static let family = 8, ipProtocol = 12, remoteIPv4 = 16, remoteIPv6 = 20, localPort = 60
    }

    /// sk_lookup verdicts: SK_PASS lets the lookup go on (with the socket assigned, if one
    /// was); SK_DROP ends it with no socket.
    static let pass: Int32 = 1, drop: Int32 = 0

    /// The SOCKMAPs of the program, by family and transport (descriptors).
    public struct Maps: Sendable {
        public var udp4: Int32, udp6: Int32, tcp4: Int32, tcp6: Int32

        public init(udp4: Int32, udp6: Int32, tcp4: Int32, tcp6: Int32) {
            (self.udp4, self.udp6, self.tcp4, self.tcp6) = (udp4, udp6, tcp4, tcp6)
        }
    }

    /// The program. Anything but a UDP or TCP lookup for port 53 of a packet from one of the
    /// prefixes passes untouched: this runs for every TCP and UDP
    /// socket lookup of the namespace. One of ours goes to the socket at its key in the map
    /// of its family and transport, or is dropped when there is none or it cannot take it:
    /// fail-closed, so that a query steered to a profile whose proxy is gone never reaches
    /// another socket (a resolver bound to 0.0.0.0:53 or [::]:53 would answer it outside
    /// the tunnel). The input hook's lookup meets the same verdict and refuses such a query
    /// at once (DNSRouting.steeredQueryGuards in Plan).
    public static func program(maps: Maps) throws(ProgramError) -> [BPFInstruction] {
        var code = BPFAssembler()
        code.move(.r6, .r1)
        // r9 = the transport, kept across the calls below.
        code.load(.word, .r9, from: .r6, Context.ipProtocol)
        code.jump(if: .r9, .equal, 17, to: "transport") // IPPROTO_UDP
        code.jump(if: .r9, .notEqual, 6, to: "pass") // IPPROTO_TCP
        code.label("transport")
        // Host order here, unlike the addresses and the remote port.
        code.load(.word, .r1, from: .r6, Context.localPort)
        code.jump(if: .r1, .notEqual, 53, to: "pass")
        // From any interface: a member's query comes in on `lo`, a routed container's on its
        // veth with the source its input NAT gave it (ContainerRules). One that came from
        // elsewhere with a steering address (fd7f:4d:: is one of the host's own, not a
        // martian) carries no profile's mark, and the proxy takes only those.
        code.load(.word, .r1, from: .r6, Context.family)
        code.jump(if: .r1, .equal, 10, to: "ipv6") // AF_INET6
        code.jump(if: .r1, .notEqual, 2, to: "pass") // AF_INET
        // r1 = the key, as `mapKey(remoteIPv4:)` derives it.
        code.load(.word, .r1, from: .r6, Context.remoteIPv4)
        code.fromNetworkOrder(.r1, bits: 32)
        code.move(.r2, .r1)
        code.shiftRight(.r2, 16)
        code.jump(if: .r2, .notEqual, network >> 16, to: "pass")
        code.and(.r1, 0xffff)
        code.store(.word, .r1, to: .r10, -4)
        lookUp(&code, udp: maps.udp4, tcp: maps.tcp4, family: "4")
        // As `mapKey(remoteIPv6:)`: the first three words are the prefix's, the last is the key.
        code.label("ipv6")
        for (index, word) in network6Words.enumerated() {
            code.load(.word, .r1, from: .r6, Context.remoteIPv6 + 4 * index)
            code.jump(if: .r1, .notEqual, word, to: "pass")
        }
        code.load(.word, .r1, from: .r6, Context.remoteIPv6 + 12)
        code.fromNetworkOrder(.r1, bits: 32)
        code.move(.r2, .r1)
        code.shiftRight(.r2, 16)
        code.jump(if: .r2, .notEqual, 0, to: "pass")
        code.store(.word, .r1, to: .r10, -4)
        lookUp(&code, udp: maps.udp6, tcp: maps.tcp6, family: "6")
        code.label("found")
        code.jumpIfZero(.r0, to: "drop")
        // The lookup took a reference on the socket: released whatever the assignment says.
        code.move(.r7, .r0)
        code.move(.r1, .r6)
        code.move(.r2, .r7)
        code.move(.r3, 0)
        code.call(.socketAssign)
        code.move(.r8, .r0)
        code.move(.r1, .r7)
        code.call(.socketRelease)
        // A socket that cannot take it (not of the packet's transport or family, a TCP
        // socket not listening): dropped too, not left to the lookup.
        code.jumpIfNotZero(.r8, to: "drop")
        code.label("pass")
        code.exit(returning: pass)
        code.label("drop")
        code.exit(returning: drop)
        return try code.assemble()
    }

    /// r0 = the socket at the key on the stack, from the TCP map when r9 says TCP, else the
    /// UDP one; then on to "found".
    private static func lookUp(_ code: inout BPFAssembler, udp: Int32, tcp: Int32, family: String) {
        code.jump(if: .r9, .equal, 6, to: "tcp" + family)
        code.lookUp(map: udp, keyAt: -4)
        code.jump(to: "found")
        code.label("tcp" + family)
        code.lookUp(map: tcp, keyAt: -4)
        code.jump(to: "found")
    }
}
