import Control
import Glibc
import HexDigits
import Monotonic
import Netlink
import Nftables
import Plan
import Policy

/// What vpnd remembers between two looks at the profile tunnels' own transports.
struct TransportWatch {
    /// The transports as last logged, by interface.
    var known: [String: TunnelTransport] = [:]
    /// A transport's port: the known one, or one the loop guard holds.
    struct Port: Hashable, Comparable, CustomStringConvertible {
        var tcp: Bool
        var number: UInt16
        static func < (a: Port, b: Port) -> Bool { (a.tcp ? 1 : 0, a.number) < (b.tcp ? 1 : 0, b.number) }
        var description: String { "\(tcp ? "tcp" : "udp") \(number)" }
    }
    /// Ports whose earlier connections were forgotten when they became known or guarded.
    var cleaned: Set<Port> = []
    /// Ports newly known or guarded, and since when: their earlier connections are
    /// forgotten only after `drain`, while their packets are dropped
    /// (route_output for a known port, the loop guard for a guarded one).
    var held: [Port: MonotonicInstant] = [:]
    var lastConntrackError: String?
    /// Each profile's loop counter when last looked at, and when a loop was last logged.
    var loopPackets: [String: UInt64] = [:]
    var loggedLoop: [String: (time: Int, packets: UInt64)] = [:]
    var conntrack: ConntrackClient?

    /// A loop that goes on is logged again after this many seconds at most (never a flood).
    static let repeatSeconds = 10
    /// What a loop leaves behind drains meanwhile: the tunnel's daemon still holds packets
    /// it read from its own tunnel, each one of its own transport packets wrapped once more.
    /// Sent to the peer once the connection goes direct, the peer would unwrap them and take
    /// the tunnel's own address for the client's endpoint (seen: the server then looped
    /// into its own tunnel). Held in the drop, they never leave.
    static let drain: Swift.Duration = .seconds(1)
}

/// After each apply: a transport port newly kept out of the profiles forgets, a second
/// later, the tracked connections that had carried it into a tunnel (with a profile's mark,
/// or a source NAT: the masquerade to the tunnel's address would stick), and a loop the guard dropped is logged within the second it
/// happened (vpnd looks at least once a second), then at most every 10 s while it lasts.
extension Daemon {
    func followTransports() {
        guard let facts = appliedFacts else { return }
        for profile in policy.profiles {
            let interface = profile.tunnel.interfaceName
            let transport = facts.tunnelTransports[interface]
            if let transport, !Self.sameButDetail(transport, transportWatch.known[interface]) {
                log.info("tunnel \(interface) (profile \(profile.name)): transport \(Self.describe(transport)); \(Self.consequence(transport))")
            }
            transportWatch.known[interface] = transport
        }
        forgetConnectionsOfNewTransports(facts)
        logLoops(facts)
    }

    private func forgetConnectionsOfNewTransports(_ facts: RuntimeFacts) {
        // A guarded port's connection a profile carried into the tunnel (a loop under way) is
        // forgotten too: else, once its daemon marks its socket, the connection's old mark
        // would keep it in the guard's drop for as long as the daemon keeps sending.
        let transports = policy.profiles.compactMap { facts.tunnelTransports[$0.tunnel.interfaceName] }
        let ports = Set(transports.flatMap { transport in
            transport.loopUDPPorts.map { TransportWatch.Port(tcp: false, number: $0) } + transport.guardTCPPorts.map { TransportWatch.Port(tcp: true, number: $0) }
        })
        transportWatch.cleaned.formIntersection(ports)
        transportWatch.held = transportWatch.held.filter { ports.contains($0.key) }
        let now = MonotonicInstant.now()
        for port in ports.subtracting(transportWatch.cleaned) where transportWatch.held[port] == nil { transportWatch.held[port] = now }
        let fresh = Set(transportWatch.held.filter { now.since($0.value) >= TransportWatch.drain }.keys)
        guard !fresh.isEmpty else { return }
        let routing = policy.routing
        let profileMarks = Set(policy.profiles.map(\.mark.value))
        do {
            if transportWatch.conntrack == nil { transportWatch.conntrack = try ConntrackClient() }
            // By the mark, or by the source NAT alone: the first rule of route_output may
            // already have cleared the mark of the connection's latest packet.
            var deleted = 0
            for tcp in [false, true] {
                let numbers = Set(fresh.filter { $0.tcp == tcp }.map(\.number))
                deleted += try transportWatch.conntrack!.delete(tcp: tcp, sourcePorts: numbers) { profileMarks.contains($0 & routing.markMask) }
            }
            transportWatch.cleaned.formUnion(fresh)
            for port in fresh { transportWatch.held[port] = nil }
            transportWatch.lastConntrackError = nil
            if deleted > 0 {
                log.notice("forgot \(deleted) tracked connection(s) from \(fresh.sorted().map(\.description).joined(separator: ", ")) that a profile had carried into a tunnel: that tunnel's own transport")
            }
        } catch {
            // Tried again at the next look; said once. Until then the connection's packets
            // are dropped (TransportRules), never sent with the tunnel's address.
            let text = "\(error)"
            if text != transportWatch.lastConntrackError {
                log.warning("could not forget the tracked connections of \(fresh.sorted().map(\.description).joined(separator: ", ")): \(text); a connection a profile had carried into its tunnel stays blocked until this succeeds")
            }
            transportWatch.lastConntrackError = text
        }
    }

    private func logLoops(_ facts: RuntimeFacts) {
        guard let counters = try? applier.counters() else { return }
        let now = Int(time(nil))
        for profile in policy.profiles {
            let name = ProfileObjectNames(profile.name).loopCounter
            let packets = counters[name]?.packets ?? 0
            let before = transportWatch.loopPackets[profile.name] ?? packets
            transportWatch.loopPackets[profile.name] = packets
            guard packets > before else { continue }
            let last = transportWatch.loggedLoop[profile.name]
            if let last, now - last.time < TransportWatch.repeatSeconds { continue }
            transportWatch.loggedLoop[profile.name] = (now, packets)
            let interface = profile.tunnel.interfaceName
            let transport = facts.tunnelTransports[interface] ?? TunnelTransport(source: .unknown)
            let hint = transport.source == .unknown
                ? "vpnd cannot tell which of its sockets is its transport (\(transport.detail ?? "nobody to ask")): give that socket a mark of its own (wg's fwmark, OpenVPN's --mark), which keeps it out of the profiles"
                : "its socket moved to a port vpnd did not know yet; vpnd keeps the port it knows now (\(Self.describe(transport))) out of every profile"
            log.warning("loop: tunnel \(interface) (profile \(profile.name)): \(packets - (last?.packets ?? before)) packet(s) of its own transport were about to enter it and were dropped (\(packets) in all); \(hint)")
        }
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

    func transportStatus(_ profile: Profile, counters: [String: NftCounter]) -> TransportStatus? {
        guard let transport = appliedFacts?.tunnelTransports[profile.tunnel.interfaceName] else { return nil }
        let loop = counters[ProfileObjectNames(profile.name).loopCounter]
        return TransportStatus(source: transport.source.rawValue, udpPort: transport.udpPort, owner: transport.owner, pid: transport.heldBy,
                               fwmark: transport.fwmark.map { hex($0) }, endpoints: transport.endpoints.map(\.description),
                               guardedUDPPorts: transport.guardUDPPorts, guardedTCPPorts: transport.guardTCPPorts, detail: transport.detail,
                               loopDropped: Traffic(packets: loop?.packets ?? 0, bytes: loop?.bytes ?? 0))
    }
}
