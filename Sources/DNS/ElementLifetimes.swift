import Addresses
import Monotonic

/// When the elements the proxies added expire, so that adding an address again never
/// shortens its life. The kernel gives an element that exists the new timeout, a shorter
/// one too (seen on 6.18: 300 s, then 60 s, lists "expires 1m"). Two names that share an
/// address with different TTLs would then end the element while a client still holds the
/// longer answer: a route.domains name's connections would leave direct, a name that
/// stays in the tunnel would be bypassed. So each timeout is raised to what its element
/// has left. One table for every profile's proxy (they fill the same route.domains sets);
/// entries go once expired. An element added before vpnd started (carried over in the
/// table) is not known here: its first re-add may still shorten it.
public struct DNSElementLifetimes: Sendable {
    private var expiries: [String: [IPAddress: MonotonicInstant]] = [:]
    private var count = 0
    private var pruneAt = 4096

    public init() {}

    /// `elements` with each timeout raised to the time its element has left.
    public func lengthened(_ elements: [DNSSetElement], now: MonotonicInstant) -> [DNSSetElement] {
        elements.map { element in
            guard let expires = expiries[element.set]?[element.address], expires > now else { return element }
            let left = (expires.nanoseconds - now.nanoseconds + 999_999_999) / 1_000_000_000
            var raised = element
            raised.timeoutSeconds = max(element.timeoutSeconds, UInt32(clamping: left))
            return raised
        }
    }

    /// The kernel took `elements` (as `lengthened` returned them) at `now`.
    public mutating func added(_ elements: [DNSSetElement], now: MonotonicInstant) {
        for element in elements {
            var expires = now + .seconds(Int64(element.timeoutSeconds))
            let known = expiries[element.set]?[element.address]
            if let known { expires = max(expires, known) } else { count += 1 }
            expiries[element.set, default: [:]][element.address] = expires
        }
        guard count > pruneAt else { return }
        count = 0
        for set in Array(expiries.keys) {
            expiries[set] = expiries[set]!.filter { $0.value > now }
            count += expiries[set]!.count
        }
        pruneAt = max(4096, 2 * count)
    }

    /// Elements remembered (expired ones until the next pruning).
    public var remembered: Int { count }
}
