import CLinux
import Descriptors
import Glibc

/// A layer-3 TUN interface: each read returns one IP packet the kernel routed into it, each
/// write hands one IP packet to the kernel as if it arrived on the interface.
public final class TunDevice: @unchecked Sendable {
    public let name: String
    private let descriptor: FileDescriptor
    /// Lent for one call at a time (read, write, poll); the device owns it.
    public var fd: Int32 { descriptor.raw }
    /// Whether reads and writes carry a virtio-net header (IFF_VNET_HDR): reads may then be
    /// TCP super-packets for `TunOffload` to cut, and every write needs a header in front.
    public let hasVirtioHeader: Bool

    /// Creates (or attaches to) the TUN interface `name`. The interface goes away when the
    /// descriptor closes, so a crashed engine leaves no interface behind; the profile's
    /// routes then point at nothing and the killswitch's unreachable default takes over.
    /// With `offloads`, the kernel may hand us unsegmented TCP and UDP and unfinished
    /// checksums (TUN_F_CSUM, TUN_F_TSO4/6, and TUN_F_USO4/6 where the kernel has them:
    /// 6.2), which saves a read per MTU-sized packet.
    public init(name: String, offloads: Bool = false) throws {
        guard name.utf8.count < 16 else { throw SystemError("interface name \(name) is longer than 15 bytes", code: EINVAL) }
        let descriptor = try FileDescriptor.open("/dev/net/tun", O_RDWR)
        var out = [CChar](repeating: 0, count: 16)
        guard vx_tun_attach(descriptor.raw, name, offloads ? 1 : 0, &out) == 0 else {
            throw SystemError("create TUN interface \(name)")
        }
        // A kernel that refuses the offloads still frames packets with a (flat) header.
        if offloads {
            let tcp = vx_tun_f_csum() | vx_tun_f_tso4() | vx_tun_f_tso6()
            // An older kernel refuses the UDP flags (EINVAL) and keeps TCP's.
            if vx_tun_set_offload(descriptor.raw, tcp | vx_tun_f_uso4() | vx_tun_f_uso6()) != 0 { _ = vx_tun_set_offload(descriptor.raw, tcp) }
        }
        self.descriptor = descriptor
        hasVirtioHeader = offloads
        self.name = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Reads one packet into `buffer`; returns its length, or nil when the interface is gone.
    @inline(__always)
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let n = retryingInterrupted { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        return n >= 0 ? n : nil
    }

    /// Writes one packet; a packet the kernel refuses (malformed) is dropped, not fatal.
    @inline(__always)
    @discardableResult
    public func write(_ packet: UnsafeRawBufferPointer) -> Bool {
        retryingInterrupted { Glibc.write(fd, packet.baseAddress, packet.count) } >= 0
    }

    /// Writes one packet gathered from `vectors` (a virtio-net header and a coalesced run).
    @inline(__always)
    @discardableResult
    public func write(vectors: UnsafeBufferPointer<iovec>) -> Bool {
        retryingInterrupted { writev(fd, vectors.baseAddress, Int32(vectors.count)) } >= 0
    }
}
