import CLinux

/// A process that holds a TUN device, and the inodes of its sockets: for a tunnel nobody
/// can be asked about, the best vpnd can know of its transport without the daemon's help.
public struct TunnelHolder: Hashable, Sendable {
    public var pid: Int32
    public var interface: String
    public var socketInodes: [UInt64]

    public init(pid: Int32, interface: String, socketInodes: [UInt64]) {
        self.pid = pid
        self.interface = interface
        self.socketInodes = socketInodes
    }

    /// The process inspector's lines, "PID IFNAME INODE INODE...": a malformed line is skipped.
    public static func parse(_ text: some StringProtocol) -> [TunnelHolder] {
        text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let pid = Int32(fields[0]), pid > 0 else { return nil }
            let inodes = fields.dropFirst(2).compactMap { UInt64($0) }
            guard inodes.count == fields.count - 2 else { return nil }
            return TunnelHolder(pid: pid, interface: String(fields[1]), socketInodes: inodes)
        }
    }

    /// Looks in this process (`vpnctl plan` run by root, which may look into every process;
    /// vpnd asks its inspector instead).
    public static func scanHere() -> [TunnelHolder] {
        var buffer = [CChar](repeating: 0, count: 1 << 16)
        let used = buffer.withUnsafeMutableBufferPointer { vx_tun_holders($0.baseAddress, $0.count) }
        return parse(String(decoding: buffer.prefix(used).map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
