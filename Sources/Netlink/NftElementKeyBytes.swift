import Addresses
import Nftables

/// A set element's key as the kernel stores it, both ways: written into elements (and into
/// the compares of single matches), read back from the kernel's sets.
extension NftElementKey {
    /// Cgroup ids, marks and uids in host byte order; addresses and ports in network order;
    /// interface names as IFNAMSIZ bytes, zero padded.
    var bytes: [UInt8] {
        switch self {
        case let .cgroup(id, _): return withUnsafeBytes(of: id) { Array($0) }
        case let .mark(mark): return mark.bytes
        case let .prefix(prefix): return prefix.network.address.bytes
        case let .port(port): return port.bigEndianBytes
        case let .uid(uid): return uid.bytes
        case let .interface(name):
            let bytes = Array(name.utf8.prefix(15))
            return bytes + repeatElement(0, count: 16 - bytes.count)
        }
    }

    /// The key that `bytes` of `keyType` encode; nil when they are not as long as the type's
    /// keys. An address comes back as a host prefix (what a set without intervals holds);
    /// a cgroup with an empty path, since the kernel holds only the id.
    init?(bytes: UnsafeRawBufferPointer, keyType: NftSetKeyType) {
        guard bytes.count == Int(keyType.length) else { return nil }
        switch keyType {
        case .cgroupv2: self = .cgroup(id: bytes.loadUnaligned(as: UInt64.self), path: "")
        case .mark: self = .mark(bytes.loadUnaligned(as: UInt32.self))
        case .uid: self = .uid(bytes.loadUnaligned(as: UInt32.self))
        case .port: self = .port(UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        case .ipv4Address, .ipv6Address:
            guard let address = IPAddress(bytes: bytes), let host = IPPrefix(address: address, length: address.bitCount) else { return nil }
            self = .prefix(host)
        case .interfaceName:
            self = .interface(String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self))
        }
    }
}
