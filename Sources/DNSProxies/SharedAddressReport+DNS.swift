import Control
import DNS
import Monotonic

/// An address a profile's proxy answered for a bypassed name and for a tunneled one, as
/// `vpnctl status` shows it.
extension SharedAddressReport {
    /// The names without their final dot; the seconds until one of the two answers expires,
    /// rounded up (the proxy gives only those that have not: `until` is after `now`).
    public init(_ shared: DNSSharedAddress, now: MonotonicInstant) {
        self.init(address: shared.address.description, bypassed: String(shared.bypassed.description.dropLast()),
                  tunneled: String(shared.tunneled.description.dropLast()),
                  secondsLeft: UInt32(clamping: (shared.until.nanoseconds &- now.nanoseconds + 999_999_999) / 1_000_000_000))
    }
}
