import Facts
import Glibc
import Monotonic
import Netlink
import Routing

/// Which processes hold the profile tunnels' devices, for tunnels vpnd cannot ask about.
/// Looking through every process is the costly part (a link read per open descriptor), so
/// a holder once found is asked again alone, once a second (its sockets change: a new
/// port); every process is looked through when the holder let go or died, when the
/// device is new (another index), and otherwise at most every 10 s while no process is
/// known to hold it (a kernel device, or one held in another network namespace).
public final class TunnelHolderCache {
    private var known: [String: [TunnelHolder]] = [:]
    private var scannedIndex: [String: Int32] = [:]
    private var lastFullScan: [String: MonotonicInstant] = [:]
    private var socketDiag: SocketDiag?
    static let rescan: Swift.Duration = .seconds(10)

    public init() {}

    /// `ask`: the inspector's answer for a pid (0: every process), the text TunnelHolder
    /// parses; nil when it did not answer.
    public func holders(of interface: String, link: Link, now: MonotonicInstant, ask: (Int32) -> [UInt8]?) -> [TunnelHolder]? {
        if let cached = known[interface], !cached.isEmpty {
            var refreshed: [TunnelHolder] = []
            for pid in Set(cached.map(\.pid)).sorted() {
                guard let answer = ask(-pid) else { return nil }
                refreshed += TunnelHolder.parse(String(decoding: answer, as: UTF8.self)).filter { $0.interface == interface }
            }
            if !refreshed.isEmpty {
                known[interface] = refreshed
                return refreshed
            }
        } else if scannedIndex[interface] == link.index, let last = lastFullScan[interface], now.since(last) < Self.rescan {
            return []
        }
        guard let answer = ask(0) else { return nil }
        let found = TunnelHolder.parse(String(decoding: answer, as: UTF8.self)).filter { $0.interface == interface }
        known[interface] = found
        scannedIndex[interface] = link.index
        lastFullScan[interface] = now
        return found
    }

    public func sockets() -> [SocketDiag.Entry] {
        if socketDiag == nil { socketDiag = try? SocketDiag() }
        return (try? socketDiag?.sockets()) ?? []
    }
}
