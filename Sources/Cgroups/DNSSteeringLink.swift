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
    public typealias Failure = SocketProgramSet.Failure

    private let map: FileDescriptor
    private let map6: FileDescriptor
    private let link: FileDescriptor
    /// Keys are indexes below this (a SOCKMAP is an array).
    public let capacity: UInt32

    public init(capacity: UInt32) throws(Failure) {
        self.capacity = capacity
        func sockets(ipv6: Bool) throws(Failure) -> FileDescriptor {
            do {
                return try FileDescriptor("bpf: creating the map of DNS proxy sockets (IPv\(ipv6 ? 6 : 4))",
                                          returned: vx_bpf_map_create(DNSSteering.mapType, DNSSteering.keySize, DNSSteering.valueSize, capacity,
                                                                      DNSSteering.mapName(ipv6: ipv6)))
            } catch { throw Failure(error) }
        }
        map = try sockets(ipv6: false)
        map6 = try sockets(ipv6: true)
        let descriptors = (map.raw, map6.raw)
        let program = try SocketProgramSet.load(DNSSteering.programName, type: DNSSteering.programType, attachType: DNSSteering.attachType,
                                                what: "the DNS steering program (sk_lookup with ingress_ifindex, Linux 5.17)") {
            () throws(BPFAssembler.Failure) in try DNSSteering.program(map: descriptors.0, map6: descriptors.1)
        }
        // The link holds the program from here on.
        do {
            let namespace = try FileDescriptor.open("/proc/thread-self/ns/net", O_RDONLY)
            link = try FileDescriptor("bpf: linking \(DNSSteering.programName) to the network namespace (BPF_LINK_CREATE)",
                                      returned: vx_bpf_link_create(program.raw, namespace.raw, DNSSteering.attachType))
        } catch { throw Failure(error) }
    }

    /// Queries from the profile `key` go to `socket`: a UDP socket of the family given by
    /// `ipv6` (the queries of each family go to their own map) bound to port 53, as its
    /// answers leave from its own port; its address is free, the program picks it by key
    /// (the kernel refuses a socket never bound, and the program drops queries for one that
    /// cannot take them, such as a TCP listener). The map holds the socket, not the
    /// descriptor: once every descriptor of it is closed, the socket leaves the map.
    public func set(key: UInt32, socket: borrowing FileDescriptor, ipv6: Bool = false) throws(Failure) {
        guard DNSSteering.keys.contains(key) else {
            throw Failure("bpf: setting a DNS proxy socket at key \(key), outside \(DNSSteering.keys)", code: EINVAL)
        }
        var index = key, value = UInt64(socket.raw)
        guard vx_bpf_map_update(ipv6 ? map6.raw : map.raw, &index, &value) == 0 else {
            throw Failure("bpf: setting the IPv\(ipv6 ? 6 : 4) DNS proxy socket of key \(key) (the map holds keys below \(capacity))")
        }
    }

    /// Queries of the family from the profile `key` are dropped from now on. Nothing to
    /// remove (or a key beyond the map, where nothing can be) is no failure: either way none
    /// is there.
    public func remove(key: UInt32, ipv6: Bool = false) {
        var index = key
        _ = vx_bpf_map_delete(ipv6 ? map6.raw : map.raw, &index)
    }
}
