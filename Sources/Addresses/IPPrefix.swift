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

    /// Whether every address of `other` is in this prefix.
    public func contains(_ other: IPPrefix) -> Bool {
        other.length >= length && contains(other.address)
    }

    /// The first address after the prefix, or nil when the prefix reaches the top of its
    /// family (224.0.0.0/3, ::/0): the end of the interval nft stores.
    public var end: IPAddress? {
        let start = network.address
        switch start {
        case let .v4(v):
            let size = UInt64(1) << UInt64(32 - length)
            let end = UInt64(v) + size
            return end > UInt64(UInt32.max) ? nil : .v4(UInt32(end))
        case let .v6(hi, lo):
            if length == 0 { return nil }
            if length <= 64 {
                let (sum, overflow) = hi.addingReportingOverflow(UInt64(1) << UInt64(64 - length))
                return overflow ? nil : .v6(sum, 0)
            }
            let (low, carry) = lo.addingReportingOverflow(length == 128 ? 1 : UInt64(1) << UInt64(128 - length))
            if !carry { return .v6(hi, low) }
            let (high, overflow) = hi.addingReportingOverflow(1)
            return overflow ? nil : .v6(high, low)
        }
    }

    /// Networks (host bits cleared) with every prefix that another one covers left out,
    /// sorted: what an interval set can hold (prefixes never partly overlap).
    public static func covering(_ prefixes: [IPPrefix]) -> [IPPrefix] {
        let sorted = Set(prefixes.map(\.network)).sorted { ($0.address, $0.length) < ($1.address, $1.length) }
        var result: [IPPrefix] = []
        for prefix in sorted where !(result.last.map { $0.contains(prefix) } ?? false) {
            result.append(prefix)
        }
        return result
    }

    public var description: String { "\(address)/\(length)" }
}
