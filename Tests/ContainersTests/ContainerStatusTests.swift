import Addresses
@testable import Containers
import Control
import Plan
import Routing
import SocketPrograms
import Testing

/// Status's rows for members' namespaces, from the last apply's containers, what the socket
/// programs saw and a host the test sets: held rows only for namespaces neither routed nor
/// relayed that dropped packets, a gone maker's pid left out, the routed rows with what they
/// dropped before, a relayed one paired with its relay. The real rows are proven in
/// namespaces (ContainerHoldTests, NspawnContainerTests, PodmanContainerTests).
@Suite struct ContainerStatusTests {
    static let docker = "vpn-work.slice/docker-" + String(repeating: "ab", count: 32) + ".scope"
    static let podman = "user.slice/user-1001.slice/user@1001.service/vpn-work.slice/libpod-" + String(repeating: "cd", count: 32) + ".scope"

    final class Host: ContainerLookup {
        var alive: Set<Int32> = []
        var cgroups: [Int32: String] = [:]
        var uids: [Int32: UInt32] = [:]
        var members: [String: [Int32]] = [:]
        var addresses: [Int32: [InterfaceAddress]] = [:]
        var relaying: [RelayFinder.Relay] = []
        private(set) var relaysAsked = 0

        func isAlive(_ pid: Int32) -> Bool { alive.contains(pid) }
        func cgroup(ofProcess pid: Int32) -> String? { alive.contains(pid) ? cgroups[pid] : nil }
        func realUID(of pid: Int32) -> UInt32? { alive.contains(pid) ? uids[pid] : nil }
        func processes(in cgroup: String) -> [Int32] { members[cgroup] ?? [] }
        func addresses(inNamespace id: Int32) -> [InterfaceAddress]? { addresses[id] }
        func relays() -> [RelayFinder.Relay] {
            relaysAsked += 1
            return relaying
        }
    }

    static func addresses(_ prefixes: String...) -> [InterfaceAddress] {
        prefixes.enumerated().map { InterfaceAddress(interfaceIndex: Int32($0.offset + 1), prefix: IPPrefix($0.element)!) }
    }

    static func relay(_ pid: Int32, namespace: Int32? = nil, unseen: Bool = false, uid: UInt32?) -> RelayFinder.Relay {
        RelayFinder.Relay(pid: pid, command: RelayCommand(program: "slirp4netns", target: .path("/run/user/\(uid ?? 0)/netns/n\(pid)"), interface: "tap0"),
                          namespace: namespace, unseen: unseen, uid: uid)
    }

    @Test func heldRowsLeaveOutRoutedRelayedAndQuietNamespaces() {
        let containers = [ContainerNamespace(cookie: 30, profile: "work", state: .held(why: "its interface mv0 (macvlan) does not lead to the host"), namespace: 4),
                          ContainerNamespace(cookie: 20, profile: "work", state: .routed(interfaces: ["ve-box"]), namespace: 3),
                          ContainerNamespace(cookie: 25, profile: "work", state: .relayed(interfaces: ["tap0"]), namespace: 5)]
        let seen = [ForeignNamespaces.Seen(cookie: 30, packets: 5, process: 0), ForeignNamespaces.Seen(cookie: 10, packets: 2, process: 0),
                    ForeignNamespaces.Seen(cookie: 20, packets: 9, process: 0), ForeignNamespaces.Seen(cookie: 25, packets: 3, process: 0),
                    ForeignNamespaces.Seen(cookie: 40, packets: 0, process: 0)]
        let held = ContainerStatus(containers: containers, seen: seen, lookup: Host()).held()
        #expect(held.map(\.cookie) == [10, 30], "routed, relayed and one that dropped nothing left out; by cookie")
        #expect(held.map(\.reason) == [nil, "its interface mv0 (macvlan) does not lead to the host"], "the finder's reason where it looked")
        #expect(held.map(\.packets) == [2, 5])
        #expect(held.map(\.namespaceID) == [nil, 4])
        #expect(held[1].addresses == nil, "a namespace that does not answer by its id")
    }

    @Test func aGoneMakersPidIsLeftOut() {
        let host = Host()
        host.alive = [4242]
        host.cgroups = [4242: Self.docker, 4343: "vpn-work.slice/gone.scope"]
        host.addresses = [4: Self.addresses("127.0.0.1/8", "::1/128", "10.88.0.2/16", "fe80::1/64", "fd00:88::2/64")]
        let containers = [ContainerNamespace(cookie: 30, profile: "work", state: .held(why: "it has no interface but loopback"), namespace: 4,
                                             cgroup: "vpn-work.slice/machine-qemu\\x2d1.scope")]
        let seen = [ForeignNamespaces.Seen(cookie: 30, packets: 1, process: 4242), ForeignNamespaces.Seen(cookie: 31, packets: 1, process: 4343)]
        let live = ContainerStatus(containers: containers, seen: seen, lookup: host).held()
        #expect(live.map(\.pid) == [4242, nil], "a gone process's pid is not shown (another may have it)")
        #expect(live[0].cgroup == Self.docker, "the live maker's cgroup, before the one the finder saw")
        #expect(live[0].runtime == "docker" && live[0].name == "abababababab")
        #expect(live[0].addresses == ["10.88.0.2/16", "fd00:88::2/64"], "loopback's and link-local left out")
        #expect(live[1].cgroup == nil && live[1].runtime == nil, "a gone maker of a namespace the finder never placed")
        host.alive = []
        let gone = ContainerStatus(containers: containers, seen: seen, lookup: host).held()
        #expect(gone[0].pid == nil)
        #expect(gone[0].cgroup == "vpn-work.slice/machine-qemu\\x2d1.scope", "the cgroup the finder last saw it in")
        #expect(gone[0].runtime == "machine" && gone[0].name == "qemu-1")
    }

    @Test func routedRowsCarryWhatTheyDroppedBefore() {
        let host = Host()
        host.addresses = [3: Self.addresses("172.17.0.2/16")]
        let containers = [ContainerNamespace(cookie: 50, profile: "work", state: .routed(interfaces: ["veth1", "veth2", "veth3"]),
                                             bridges: ["veth1": "br1", "veth2": "br0", "veth3": "br1"], namespace: 3, cgroup: Self.docker),
                          ContainerNamespace(cookie: 20, profile: "home", state: .routed(interfaces: ["ve-box"]), namespace: 9),
                          ContainerNamespace(cookie: 30, profile: "work", state: .held(why: "it has no interface but loopback"))]
        let seen = [ForeignNamespaces.Seen(cookie: 50, packets: 7, process: 0), ForeignNamespaces.Seen(cookie: 30, packets: 2, process: 0)]
        let routed = ContainerStatus(containers: containers, seen: seen, lookup: host).routed()
        #expect(routed.map(\.cookie) == [20, 50])
        #expect(routed.map(\.profile) == ["home", "work"])
        #expect(routed.map(\.heldPackets) == [0, 7], "what it dropped while held; none seen is 0")
        #expect(routed[1].interfaces == ["veth1", "veth2", "veth3"] && routed[1].bridges == ["br0", "br1"])
        #expect(routed[1].namespaceID == 3 && routed[1].runtime == "docker" && routed[1].addresses == ["172.17.0.2/16"])
        #expect(routed[0].bridges.isEmpty && routed[0].cgroup == nil && routed[0].addresses == nil)
    }

    @Test func aRelayedRowHasItsRelayAndItsProfile() {
        let host = Host()
        // Namespace 5's maker lives (uid 1000); 6's is gone, its cgroup's one user is 1001.
        host.alive = [500, 700, 701, 610]
        host.uids = [500: 1000, 610: 1001]
        host.members = [Self.podman: [610]]
        host.cgroups = [700: "vpn-work.slice/relay.scope", 701: "user.slice/user-1001.slice/user@1001.service/app.slice/podman.scope"]
        host.relaying = [Self.relay(700, namespace: 5, uid: 1000), Self.relay(701, unseen: true, uid: 1001), Self.relay(702, unseen: true, uid: 1002)]
        let containers = [ContainerNamespace(cookie: 60, profile: "work", state: .relayed(interfaces: ["tap0"]), namespace: 6,
                                             cgroup: Self.podman),
                          ContainerNamespace(cookie: 50, profile: "work", state: .relayed(interfaces: ["tap0"]), namespace: 5),
                          ContainerNamespace(cookie: 40, profile: "work", state: .routed(interfaces: ["ve-box"]), namespace: 3)]
        let seen = [ForeignNamespaces.Seen(cookie: 50, packets: 0, process: 500), ForeignNamespaces.Seen(cookie: 60, packets: 0, process: 600)]
        let relayed = ContainerStatus(containers: containers, seen: seen, lookup: host)
            .relayed(profileCgroups: [("work", "vpn-work.slice"), ("home", "vpn-home.slice"), ("home", "vpn-work.slice/relay.scope")])
        #expect(relayed.map(\.cookie) == [50, 60], "relayed ones alone, by cookie")
        #expect(relayed[0].relay == RelayProcessReport(pid: 700, program: "slirp4netns", match: "named", profile: "work", cgroup: "vpn-work.slice/relay.scope"),
                "named by its command line; the first profile its cgroup is in")
        #expect(relayed[1].relay == RelayProcessReport(pid: 701, program: "slirp4netns", match: "alone", profile: nil,
                                                       cgroup: "user.slice/user-1001.slice/user@1001.service/app.slice/podman.scope"),
                "the one unseen relay of the cgroup's one user; in no profile")
        #expect(relayed[1].runtime == "podman" && relayed[1].name == "cdcdcdcdcdcd" && relayed[1].namespaceID == 6)
        #expect(host.relaysAsked == 1)
    }

    @Test func noRelayedNamespaceReadsNoRelays() {
        let host = Host()
        let containers = [ContainerNamespace(cookie: 40, profile: "work", state: .routed(interfaces: ["ve-box"]), namespace: 3)]
        #expect(ContainerStatus(containers: containers, seen: [], lookup: host).relayed(profileCgroups: [("work", "vpn-work.slice")]).isEmpty)
        #expect(host.relaysAsked == 0, "every process's command line is read only when a namespace is relayed")
    }

    @Test func aRelayedNamespaceWithNoRelayFoundHasNone() {
        let host = Host()
        host.relaying = [Self.relay(701, unseen: true, uid: 1001), Self.relay(702, unseen: true, uid: 1002)]
        let containers = [ContainerNamespace(cookie: 60, profile: "work", state: .relayed(interfaces: ["tap0"]), namespace: 6)]
        let relayed = ContainerStatus(containers: containers, seen: [], lookup: host).relayed(profileCgroups: [])
        #expect(relayed.count == 1 && relayed[0].relay == nil, "two unseen relays it can be, no user known: neither")
    }
}
