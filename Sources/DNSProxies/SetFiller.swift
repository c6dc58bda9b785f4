import Addresses
import Applying
import DNS
import Monotonic
import Nftables
import ServiceSupport

/// The addresses the proxies learn, into their sets through the applier, acknowledged by
/// the kernel before the answers that carry them leave. One for every profile's resolver:
/// they fill the same route.domains sets, and an address answered again must not have its
/// element shortened by the other's TTL (DNSElementLifetimes).
final class SetFiller {
    private let applier: any KernelApplying
    private let log: Log
    private var lifetimes = DNSElementLifetimes()

    init(applier: any KernelApplying, log: Log) {
        self.applier = applier
        self.log = log
    }

    /// The elements into their sets at `now`; false if the kernel refused them (logged: the
    /// answers of `profile` that carried them are refused). An address asked for twice in a
    /// burst gets the longer timeout, and none gets a shorter one than its element has left.
    func fill(_ elements: [DNSSetElement], of profile: String, now: MonotonicInstant) -> Bool {
        let elements = lifetimes.lengthened(elements, now: now)
        var bySet: [String: [IPAddress: UInt32]] = [:]
        for element in elements { bySet[element.set, default: [:]][element.address] = max(bySet[element.set]?[element.address] ?? 0, element.timeoutSeconds) }
        let entries = bySet.mapValues { addresses in
            addresses.map { NftElement(key: .prefix(IPPrefix(address: $0.key, length: $0.key.bitCount)!), timeout: $0.value) }
        }
        do {
            try applier.addRuntimeElements(entries)
            lifetimes.added(elements, now: now)
            return true
        } catch {
            log.error("DNS proxy of profile \(profile): could not add \(elements.count) address(es) to \(bySet.keys.sorted().joined(separator: ", ")): \(error); the answers are refused")
            return false
        }
    }
}
