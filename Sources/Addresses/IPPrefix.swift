/// An address with a prefix length ("10.20.0.0/16", "fd00::/8"). Host bits are kept as
/// written, so an interface address ("10.64.0.2/32") and a network both fit.
public struct IPPrefix: Hashable, Sendable, CustomStringConvertible {
    public var address: IPAddress
    public var length: Int

    public init?(address: IPAddress, length: Int) {
        guard (0...address.bitCount).contains(length) else { return nil }
        self.address = address
        self.length = length
    }

    /// "a.b.c.d/n", or a bare address meaning a host prefix.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        var length = address.bitCount
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy(\.isASCIIDigit), parts[1].count <= 3,
                  let value = Int(parts[1]) else { return nil }
            length = value
        }
        self.init(address: address, length: length)
    }

    public static func defaultRoute(ipv4: Bool) -> IPPrefix {
        IPPrefix(address: ipv4 ? .v4(0) : .v6(0, 0), length: 0)!
    }

    public var isIPv4: Bool { address.isIPv4 }

    /// The prefix with host bits cleared.
    public var network: IPPrefix {
        switch address {
        case let .v4(v):
            let mask: UInt32 = length == 0 ? 0 : ~UInt32(0) << (32 - length)
            return IPPrefix(address: .v4(v & mask), length: length)!
        case let .v6(hi, lo):
            let hiMask: UInt64 = length == 0 ? 0 : (length >= 64 ? ~0 : ~UInt64(0) << (64 - length))
            let loMask: UInt64 = length <= 64 ? 0 : (length == 128 ? ~0 : ~UInt64(0) << (128 - length))
            return IPPrefix(address: .v6(hi & hiMask, lo & loMask), length: length)!
        }
    }

    public func contains(_ other: IPAddress) -> Bool {
        guard other.isIPv4 == isIPv4 else { return false }
        return IPPrefix(address: other, length: length)!.network == network
    }

    public var description: String { "\(address)/\(length)" }
}
