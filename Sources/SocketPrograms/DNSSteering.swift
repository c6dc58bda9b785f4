import Addresses
import BPF

/// DNS by routing, its kernel end (IPv4): a member's UDP query to port 53 is routed into
/// local delivery on `lo` with a source address in 127.77.0.0/16 that names its profile,
/// and a network-namespace `sk_lookup` program hands it to that profile's proxy socket,
/// whatever address it asked. The proxy answers from the address asked (IP_TRANSPARENT,
/// `ipi_spec_dst`), so the member sees its own server answer.
///
/// A profile is a key in 1...65534, its source address 127.77.(key >> 8).(key & 255), and
/// its proxy socket sits in a SOCKMAP at that key (`DNSSteeringLink` in Cgroups). The
/// /16's first and last addresses name no profile: a query from them is dropped like one
/// whose proxy is gone.
public enum DNSSteering {
    /// The profiles' source addresses: any query from here to port 53 on `lo` is ours.
    public static let prefix = IPPrefix(address: .v4(network), length: 16)!

    public static let keys: ClosedRange<UInt32> = 1...65534

    /// 127.77.0.0, host order.
    static let network: UInt32 = 0x7f4d_0000

    /// The source address of the profile `key` (in `keys`).
    public static func address(of key: UInt32) -> IPAddress {
        precondition(keys.contains(key), "a DNS steering key is in 1...65534, not \(key)")
        return .v4(network | key)
    }

    /// The profile an address names; nil for an address outside `prefix`, its first or its last.
    public static func key(of address: IPAddress) -> UInt32? {
        guard case let .v4(value) = address, value & 0xffff_0000 == network, keys.contains(value & 0xffff) else { return nil }
        return value & 0xffff
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

    /// BPF_PROG_TYPE_SK_LOOKUP, attached as BPF_SK_LOOKUP to a network namespace.
    public static let programType: UInt32 = 30
    public static let attachType: UInt32 = 36
    /// The kernel's name for the program (at most 15 characters), as bpftool lists it.
    public static let programName = "vx_dnssteer"

    /// The SOCKMAP: key a u32 index (the profile's key), value the socket's descriptor as a
    /// u64 when written (the kernel keeps the socket, not the number).
    public static let mapType: UInt32 = 15
    public static let mapName = "vx_dnsproxies"
    public static let keySize: UInt32 = 4, valueSize: UInt32 = 8

    /// Context offsets (uapi struct bpf_sk_lookup; Tests check them against the header).
    enum Context {
        static let family = 8, ipProtocol = 12, remoteIPv4 = 16, localPort = 60, ingressInterface = 64
    }

    /// sk_lookup verdicts: SK_PASS lets the lookup go on (with the socket assigned, if one
    /// was); SK_DROP ends it with no socket.
    static let pass: Int32 = 1, drop: Int32 = 0

    /// The program, for the SOCKMAP `map` (a descriptor). Anything but a UDP/IPv4 lookup for
    /// port 53 of a packet that came in on `lo` from `prefix` passes untouched: this runs
    /// for every TCP and UDP socket lookup of the namespace. One of ours goes to the socket
    /// at its key, or is dropped when there is none or it cannot take it: fail-closed, so
    /// that a query steered to a profile whose proxy is gone never reaches another socket
    /// (a resolver bound to 0.0.0.0:53 would answer it outside the tunnel).
    public static func program(map: Int32) throws(BPFAssembler.Failure) -> [BPFInstruction] {
        var code = BPFAssembler()
        code.move(.r6, .r1)
        code.load(.word, .r1, from: .r6, Context.family)
        code.jump(if: .r1, .notEqual, 2, to: "pass") // AF_INET
        code.load(.word, .r1, from: .r6, Context.ipProtocol)
        code.jump(if: .r1, .notEqual, 17, to: "pass") // IPPROTO_UDP
        // Host order here, unlike the addresses and the remote port.
        code.load(.word, .r1, from: .r6, Context.localPort)
        code.jump(if: .r1, .notEqual, 53, to: "pass")
        // The routed query's only way in: from another interface, a 127.77 source is a
        // martian, unless route_localnet lets it through. Loopback is 1 in every namespace.
        code.load(.word, .r1, from: .r6, Context.ingressInterface)
        code.jump(if: .r1, .notEqual, 1, to: "pass")
        // r1 = the key, as `mapKey(remoteIPv4:)` derives it.
        code.load(.word, .r1, from: .r6, Context.remoteIPv4)
        code.fromNetworkOrder(.r1, bits: 32)
        code.move(.r2, .r1)
        code.shiftRight(.r2, 16)
        code.jump(if: .r2, .notEqual, network >> 16, to: "pass")
        code.and(.r1, 0xffff)
        code.store(.word, .r1, to: .r10, -4)
        code.lookUp(map: map, keyAt: -4)
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
        // A socket that cannot take it (not UDP, not IPv4): dropped too, not left to the lookup.
        code.jumpIfNotZero(.r8, to: "drop")
        code.label("pass")
        code.exit(returning: pass)
        code.label("drop")
        code.exit(returning: drop)
        return try code.assemble()
    }
}
