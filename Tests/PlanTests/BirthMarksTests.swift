import Addresses
import Nftables
import Plan
import Policy
import Routing
import Testing

/// Sockets are born in their tunnel: which cgroups get the socket mark program, with which
/// mark, and what the rest of the plan does for sockets born marked.
@Suite struct BirthMarksTests {
    let work = profile("work", tunnel: "wg0", index: 1)
    let home = profile("home", tunnel: "tun0", index: 2)

    @Test func profileJoinedAndBypassCgroupsAreBornMarked() {
        var bypassing = work
        bypassing.bypassExecutables = ["/usr/bin/steam"]
        let policy = Policy(profiles: [bypassing, home])
        var facts = RuntimeFacts(cgroupParent: "vpn.slice", cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-bypass.slice": 103])
        let app = "user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-org.example.App-4242.scope"
        facts.joinedCgroups = [app: .init(profile: "home", id: 201), "system.slice/gone.scope": .init(profile: "nobody", id: 202)]
        #expect(Planner.plan(policy, facts: facts).socketMarks == [
            SocketMarkAttachment(cgroup: app, id: 201, mark: 0x0200_0000),
            SocketMarkAttachment(cgroup: "vpn.slice/vpn-bypass.slice", id: 103, mark: 0x7f00_0000),
            // home's own cgroup does not exist (no id): nothing to attach until it does.
            SocketMarkAttachment(cgroup: "vpn.slice/vpn-work.slice", id: 101, mark: 0x0100_0000),
        ])
    }

    /// A cgroup made again under the same path is another cgroup: another attachment.
    @Test func aCgroupMadeAgainIsAnotherAttachment() {
        let policy = Policy(profiles: [work])
        let before = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])).socketMarks
        let after = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 102])).socketMarks
        #expect(before.map(\.cgroup) == after.map(\.cgroup) && before != after)
        var pinned = policy
        pinned.routing.markMask = 0x00ff_0000
        #expect(Planner.plan(pinned, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])).socketMarks.map(\.mark) == [0x0001_0000])
    }

    /// System mode: the root is never attached (it would mark vpnd's and the tunnel
    /// daemons' own sockets); nftables marks the system profile's members outside the
    /// profile cgroups. A profile parent at the root gives no root attachment either.
    @Test func theRootIsNeverAttached() {
        let policy = Policy(profiles: [work, home], system: SystemSettings(profile: "work"))
        let facts = RuntimeFacts(cgroupParent: "", cgroupIDs: ["vpn-work.slice": 101, "vpn-home.slice": 102, "vpn-bypass.slice": 103, "": 1])
        let marks = Planner.plan(policy, facts: facts).socketMarks
        #expect(marks.map(\.cgroup) == ["vpn-bypass.slice", "vpn-home.slice", "vpn-work.slice"])
    }

    /// allow_lan: the LAN ranges are thrown out of the profile's table, so a born-marked
    /// socket's LAN connection gets the LAN's route and address (also with the tunnel
    /// down); the tunnel's networks and route.networks stay in the table, tunneled or
    /// unreachable, more specific than the LAN's.
    @Test func allowLanThrowsTheLanOutOfTheProfileTable() {
        var lan = work
        lan.allowLAN = true
        lan.routeNetworks = [IPPrefix("10.50.0.0/16")!]
        let policy = Policy(profiles: [lan, home])
        var facts = RuntimeFacts(links: ["wg0": Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)])
        facts.tunnelNetworks = ["wg0": [IPPrefix("10.99.1.0/24")!, IPPrefix("fd99:1::/64")!]]
        let routes = Set(Planner.plan(policy, facts: facts).routes.filter { $0.table == 7301 && $0.destination.length > 0 })
        func route(_ prefix: String, _ kind: Route.Kind, _ metric: UInt32) -> Route {
            Route(destination: IPPrefix(prefix)!, table: 7301, kind: kind, metric: metric, protocolNumber: 118)
        }
        let thrown = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "fc00::/7", "fe80::/10"].map { route($0, .fallThrough, .max - 1) }
        let kept = ["10.50.0.0/16", "10.99.1.0/24", "fd99:1::/64"].flatMap { [route($0, .device(index: 7), 1), route($0, .unreachable, 2)] }
        #expect(routes == Set(thrown + kept))
        #expect(!Planner.plan(policy, facts: facts).routes.contains { $0.table == 7302 && $0.kind == .fallThrough }, "only allow_lan profiles")
    }

    /// A born-marked flow leaves through the tunnel with the tunnel's address already: no
    /// NAT binding; what went direct from a born-marked socket is NATted to the
    /// interface's address; a connection decided direct keeps the bypass mark.
    @Test func natOnlyWhereTheSourceIsNotTheInterfaces() throws {
        let state = Planner.plan(Policy(profiles: [work]), facts: RuntimeFacts())
        let (mask, bypass): (UInt32, UInt32) = (0x7f00_0000, 0x7f00_0000)
        #expect(try #require(state.nft.chain(named: "source_nat")).rules.map(\.statements) == [
            [.markMatch(mask: mask, value: 0x0100_0000, negated: false), .outputInterfaceName("wg0", negated: false),
             .sourceIsOutputInterfaceAddress(negated: true), .masquerade],
            [.markMatch(mask: mask, value: bypass, negated: false), .outputInterfaceName("lo", negated: true),
             .sourceIsOutputInterfaceAddress(negated: true), .masquerade],
        ])
        let output = try #require(state.nft.chain(named: "route_output")).rules.map(\.statements)
        // Before the connection's verdict is looked up (the transport exclusion may come first).
        let sticky = try #require(output.firstIndex(of: [.conntrackMarkMatch(mask: mask, value: bypass, negated: false), .setMark(clear: mask, set: bypass), .verdict(.accept)]))
        let verdicts = try #require(output.firstIndex(of: [.conntrackMarkVerdictMap(mask: mask, map: "connection_marks")]))
        #expect(sticky < verdicts)
    }
}
