import BPF
import CLinux
import Descriptors
import Glibc
import SocketPrograms

/// The namespace's DNS steering (`DNSSteering`): its SOCKMAPs of proxy sockets, and its
/// program linked to the network namespace of the thread that made it. Loading needs
/// CAP_BPF and CAP_NET_ADMIN; `set` and `remove` only these descriptors.
///
/// A BPF link, not a kernel-held attachment: the program runs while this object lives and
/// is detached when it goes (its link descriptor closes), also when vpnd dies. A query
/// routed to `lo` then meets the namespace's plain lookup, which a resolver bound to
/// 0.0.0.0:53 would answer: what keeps such a query from leaving then is not here.
public final class DNSSteeringLink {
    /// One SOCKMAP a family and transport, by `index(ipv6:tcp:)`, owned by `owned`.
    private var maps: [DescriptorNumber] = []
    private var owned = DescriptorTable()
    private let link: FileDescriptor
    /// Keys are indexes below this (a SOCKMAP is an array).
    public let capacity: UInt32

    private static func index(ipv6: Bool, tcp: Bool) -> Int { (ipv6 ? 1 : 0) + (tcp ? 2 : 0) }

    public init(capacity: UInt32) throws(SocketProgramError) {
        self.capacity = capacity
        for (ipv6, tcp) in [(false, false), (true, false), (false, true), (true, true)] {
            do {
                maps.append(owned.insert(try FileDescriptor("bpf: creating the map of DNS proxy sockets (IPv\(ipv6 ? 6 : 4), \(tcp ? "TCP" : "UDP"))",
                                               returned: vx_bpf_map_create(DNSSteering.mapType, DNSSteering.keySize, DNSSteering.valueSize, capacity,
                                                                           DNSSteering.mapName(ipv6: ipv6, tcp: tcp)))))
            } catch { throw .system(error) }
        }
        let descriptors = DNSSteering.Maps(udp4: maps[0].raw, udp6: maps[1].raw, tcp4: maps[2].raw, tcp6: maps[3].raw)
        let program = try SocketProgramSet.load(DNSSteering.programName, type: DNSSteering.programType, attachType: DNSSteering.attachType,
                                                what: "the DNS steering program (sk_lookup, Linux 5.9)") {
            () throws(ProgramError) in try DNSSteering.program(maps: descriptors)
        }
        // The link holds the program from here on.
        do {
            let namespace = try FileDescriptor.open("/proc/thread-self/ns/net", O_RDONLY)
            link = try FileDescriptor("bpf: linking \(DNSSteering.programName) to the network namespace (BPF_LINK_CREATE)",
                                      returned: vx_bpf_link_create(program.raw, namespace.raw, DNSSteering.attachType))
        } catch { throw .system(error) }
    }

    /// Queries from the profile `key` go to `socket`: of the family given by `ipv6` and the
    /// transport by `tcp` (each has its own map). A UDP socket bound to port 53, as its
    /// answers leave from its own port; a TCP one listening (its connections take the
    /// address and port asked). The program picks it by key (the kernel refuses a socket
    /// never bound, and the program drops queries for one that cannot take them). The map
    /// holds the socket, not the descriptor: once every descriptor of it is closed, the
    /// socket leaves the map.
    public func set(key: UInt32, socket: borrowing FileDescriptor, ipv6: Bool = false, tcp: Bool = false) throws(SocketProgramError) {
        guard DNSSteering.keys.contains(key) else {
            throw .keyOutsideSteering(key: key, keys: DNSSteering.keys)
        }
        var index = key, value = UInt64(socket.raw)
        guard vx_bpf_map_update(maps[Self.index(ipv6: ipv6, tcp: tcp)].raw, &index, &value) == 0 else {
            throw .system(SystemError("bpf: setting the IPv\(ipv6 ? 6 : 4) \(tcp ? "TCP" : "UDP") DNS proxy socket of key \(key) (the map holds keys below \(capacity))"))
        }
    }

    /// Queries of the family and transport from the profile `key` are dropped from now on.
    /// Nothing to remove (or a key beyond the map, where nothing can be) is no failure:
    /// either way none is there.
    public func remove(key: UInt32, ipv6: Bool = false, tcp: Bool = false) {
        var index = key
        _ = vx_bpf_map_delete(maps[Self.index(ipv6: ipv6, tcp: tcp)].raw, &index)
    }
}
