import Control
import DNS
import Nftables
import Plan
import Policy

/// The status of a profile's domain rules against what would escape them: Firefox's
/// canary, encrypted DNS refused, addresses shared by bypassed and other names.
extension Daemon {
    func addEncryptedAndShared(_ profile: Profile, counters: DNSProxyCounters, nft: [String: NftCounter], to status: inout DNSStatus) {
        status.canaryAnswered = counters.canaryAnswered
        status.encryptedDNS = policy.encryptedDNS(of: profile)
        status.encryptedDNSRefused = nft[ProfileObjectNames(profile.name).encryptedDNSCounter]?.packets ?? 0
        status.sharedAddresses = counters.sharedAddresses
        let now = ProfileResolver.now()
        status.sharedNow = (dns?.sharedAddresses(of: profile.name) ?? []).map {
            SharedAddressReport(address: $0.address.description, bypassed: String($0.bypassed.description.dropLast()),
                                tunneled: String($0.tunneled.description.dropLast()),
                                secondsLeft: UInt32(clamping: ($0.until.nanoseconds &- now.nanoseconds + 999_999_999) / 1_000_000_000))
        }
    }
}
