import Control
import Monotonic

/// The DNS service's part of `vpnctl status`.
extension DNSService {
    /// The names of `profile` (members' lookups through resolved's varlink socket): not
    /// followed on this host (`failure`, the host's), else what its names server answered.
    public func namesStatus(of profile: String, failure: String?) -> NamesStatus? {
        NamesStatus(failure: failure, socket: nameSocket(of: profile), counters: nameCounters(of: profile))
    }

    /// The addresses `profile`'s proxy answered both for a bypassed name and a tunneled one,
    /// whose answers have not expired at `now`.
    public func sharedAddressReports(of profile: String, now: MonotonicInstant) -> [SharedAddressReport] {
        sharedAddresses(of: profile, now: now).map { SharedAddressReport($0, now: now) }
    }
}
