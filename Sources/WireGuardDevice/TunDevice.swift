import CLinux
import Glibc

/// A layer-3 TUN interface: each read returns one IP packet the kernel routed into it, each
/// write hands one IP packet to the kernel as if it arrived on the interface.
public final class TunDevice: @unchecked Sendable {
    public let name: String
    public let fd: Int32

    /// Creates (or attaches to) the TUN interface `name`. The interface goes away when the
    /// descriptor closes, so a crashed engine leaves no interface behind; the profile's
    /// routes then point at nothing and the killswitch's unreachable default takes over.
    public init(name: String) throws {
        guard name.utf8.count < 16 else { throw SystemCallError("interface name \(name) is longer than 15 bytes", code: EINVAL) }
        let fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw SystemCallError("open /dev/net/tun") }
        var out = [CChar](repeating: 0, count: 16)
        guard vx_tun_attach(fd, name, 0, &out) == 0 else {
            let code = errno
            close(fd)
            throw SystemCallError("create TUN interface \(name)", code: code)
        }
        self.fd = fd
        self.name = String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { close(fd) }

    /// Reads one packet into `buffer`; returns its length, or nil when the interface is gone.
    @inline(__always)
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Writes one packet; a packet the kernel refuses (malformed) is dropped, not fatal.
    @inline(__always)
    @discardableResult
    public func write(_ packet: UnsafeRawBufferPointer) -> Bool {
        while true {
            let n = Glibc.write(fd, packet.baseAddress, packet.count)
            if n >= 0 { return true }
            if errno == EINTR { continue }
            return false
        }
    }
}
