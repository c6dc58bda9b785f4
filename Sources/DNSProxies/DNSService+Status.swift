import Control

/// The DNS service's part of `vpnctl status`.
extension DNSService {
    /// The names of `profile` (members' lookups through resolved's varlink socket): not
    /// followed on this host (`failure`, the host's), else what its names server answered.
    public func namesStatus(of profile: String, failure: String?) -> NamesStatus? {
        NamesStatus(failure: failure, socket: nameSocket(of: profile), counters: nameCounters(of: profile))
    }
}
