import Control
import HexDigits
import Monotonic
import Nftables
import Plan
import Policy
import ServiceSupport

/// The profile tunnels' own transports, followed after each apply: a transport that changed
/// is logged, and a loop the guard dropped is logged within the second it happened (vpnd
/// looks at least once a second), then at most every `repeatAfter` while it lasts. Nothing
/// is left to forget: no connection of a transport is tracked or NATted, and the next
/// packet from a port vpnd learned takes its new route. What it says is returned as lines
/// for the daemon's log.
public struct TransportWatch {
    public typealias Line = Log.Line

    /// The transports as last logged, by interface.
    public private(set) var known: [String: TunnelTransport] = [:]
    /// Each profile's loop counter when last looked at, and when a loop was last logged.
    private var loopPackets: [String: UInt64] = [:]
    private var loggedLoop: [String: (time: MonotonicInstant, packets: UInt64)] = [:]

    /// A loop that goes on is logged again after this long at most (never a flood).
    public static let repeatAfter = MonotonicInstant.Duration.seconds(10)

    public init() {}

    /// One look: `transports` as the applied facts have them, `counters` the nft table's
    /// (nil: not readable now, loops not looked at).
    public mutating func follow(_ policy: Policy, transports: [String: TunnelTransport], counters: [String: NftCounter]?,
                                now: MonotonicInstant) -> [Line] {
        var lines: [Line] = []
        for profile in policy.profiles {
            let interface = profile.tunnel.interfaceName
            let transport = transports[interface]
            if let transport, !Self.sameButDetail(transport, known[interface]) {
                lines.append(Line(.info, "tunnel \(interface) (profile \(profile.name)): transport \(Self.describe(transport)); \(Self.consequence(transport))"))
            }
            known[interface] = transport
        }
        if let counters { lines += loops(policy, transports: transports, counters: counters, now: now) }
        return lines
    }

    private mutating func loops(_ policy: Policy, transports: [String: TunnelTransport], counters: [String: NftCounter], now: MonotonicInstant) -> [Line] {
        var lines: [Line] = []
        for profile in policy.profiles {
            let name = ProfileObjectNames(profile.name).loopCounter
            let packets = counters[name]?.packets ?? 0
            let before = loopPackets[profile.name] ?? packets
            loopPackets[profile.name] = packets
            guard packets > before else { continue }
            let last = loggedLoop[profile.name]
            if let last, now.since(last.time) < Self.repeatAfter { continue }
            loggedLoop[profile.name] = (now, packets)
            let interface = profile.tunnel.interfaceName
            let transport = transports[interface] ?? TunnelTransport(source: .unknown)
            let hint = transport.source == .unknown
                ? "vpnd cannot tell which of its sockets is its transport (\(transport.detail ?? "nobody to ask")): give that socket a mark of its own (wg's fwmark, OpenVPN's --mark), which keeps it out of the profiles"
                : "its socket moved to a port vpnd did not know yet; vpnd keeps the port it knows now (\(Self.describe(transport))) out of every profile"
            lines.append(Line(.warning, "loop: tunnel \(interface) (profile \(profile.name)): \(Plural.count(packets - (last?.packets ?? before), "packet")) of its own transport dropped before entering it (\(packets) in all); \(hint)"))
        }
        return lines
    }

    /// Whether the log has said all there is: a detail that changes (why a busy daemon did
    /// not answer this time) is not news.
    static func sameButDetail(_ a: TunnelTransport, _ b: TunnelTransport?) -> Bool {
        guard var b else { return false }
        b.detail = a.detail
        return a == b
    }

    static func describe(_ transport: TunnelTransport) -> String {
        var text: String
        if let port = transport.udpPort {
            text = "udp \(port) (\(transport.source.rawValue)\(transport.heldBy.map { ", pid \($0)" } ?? "")\(transport.owner.map { ", uid \($0)" } ?? ""))"
        } else {
            text = transport.source == .unknown ? "unknown" : "\(transport.source.rawValue), port not known"
            if let detail = transport.detail { text += " (\(detail))" }
        }
        if let mark = transport.fwmark { text += ", fwmark \(hex(mark))" }
        if !transport.endpoints.isEmpty { text += ", peers at " + transport.endpoints.map(\.description).joined(separator: ", ") }
        let guarded = transport.guardUDPPorts.map { "udp \($0)" } + transport.guardTCPPorts.map { "tcp \($0)" }
        if !guarded.isEmpty { text += "; guarded: \(guarded.joined(separator: ", ")) of pid \(transport.heldBy.map(String.init) ?? "?"), which holds the device" }
        return text
    }

    static func consequence(_ transport: TunnelTransport) -> String {
        if transport.udpPort != nil { return "kept out of every profile" }
        if !transport.guardUDPPorts.isEmpty || !transport.guardTCPPorts.isEmpty { return "the guarded ports never enter the tunnel (dropped, logged)" }
        return "a socket of it without a mark of its own would be routed like any process's"
    }

    /// A profile's transport and its loop counter, for status.
    public static func status(_ profile: Profile, transports: [String: TunnelTransport], counters: [String: NftCounter]) -> TransportStatus? {
        guard let transport = transports[profile.tunnel.interfaceName] else { return nil }
        let loop = counters[ProfileObjectNames(profile.name).loopCounter]
        return TransportStatus(source: transport.source.rawValue, udpPort: transport.udpPort, owner: transport.owner, pid: transport.heldBy,
                               fwmark: transport.fwmark.map { hex($0) }, endpoints: transport.endpoints.map(\.description),
                               guardedUDPPorts: transport.guardUDPPorts, guardedTCPPorts: transport.guardTCPPorts, detail: transport.detail,
                               loopDropped: Traffic(packets: loop?.packets ?? 0, bytes: loop?.bytes ?? 0))
    }
}
