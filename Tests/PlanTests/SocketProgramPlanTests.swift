import Addresses
import DNS
import DomainNames
import Plan
import Policy
import Routing
import SocketPrograms
import Testing

/// cgroup -> mark: where the socket programs are attached and what they do there.
@Suite struct SocketProgramPlanTests {
    let mask: UInt32 = 0x7f00_0000

    @Test func profileJoinedBypassAndParentCgroups() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassExecutables = ["/usr/bin/steam"]
        work.bypassDomains = [try! DomainPattern("bank.example")]
        let home = profile("home", tunnel: "tun0", index: 2)
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101, "vpn.slice/vpn-home.slice": 102, "vpn.slice/vpn-bypass.slice": 103],
                                 cgroupsAlongParent: ["vpn.slice": 100, "system.slice": 10])
        facts.rootCgroupID = 1
        facts.joinedCgroups["user.slice/user-1000.slice/user@1000.service/vpn.slice/vpn-home.slice"] = RuntimeFacts.JoinedCgroup(profile: "home", id: 200)
        let attachments = Planner.plan(Policy(profiles: [work, home]), facts: facts).socketPrograms
        let member = { (mark: UInt32, refuse: Bool) in
            SocketSettings(mark: mark, mask: self.mask, guardMarks: [0x0100_0000, 0x0200_0000], refuseEncryptedDNS: refuse, guardNamespace: true)
        }
        #expect(attachments == [
            SocketProgramAttachment(cgroup: "", id: 1, settings: SocketSettings(mark: 0, mask: mask, guardPath: true)),
            SocketProgramAttachment(cgroup: "user.slice/user-1000.slice/user@1000.service/vpn.slice/vpn-home.slice", id: 200, settings: member(0x0200_0000, false)),
            SocketProgramAttachment(cgroup: "vpn.slice", id: 100, settings: SocketSettings(mark: 0, mask: mask, requireMark: true)),
            SocketProgramAttachment(cgroup: "vpn.slice/vpn-bypass.slice", id: 103, settings: SocketSettings(mark: 0x7f00_0000, mask: mask)),
            SocketProgramAttachment(cgroup: "vpn.slice/vpn-home.slice", id: 102, settings: member(0x0200_0000, false)),
            SocketProgramAttachment(cgroup: "vpn.slice/vpn-work.slice", id: 101, settings: member(0x0100_0000, true)),
        ])
        #expect(attachments.first { $0.cgroup == "vpn.slice" }?.settings.programs == [.socketCreate], "the parent refuses, it redirects nothing")
        #expect(attachments.filter { $0.settings.guardNamespace }.map(\.cgroup) == [
            "user.slice/user-1000.slice/user@1000.service/vpn.slice/vpn-home.slice", "vpn.slice/vpn-home.slice", "vpn.slice/vpn-work.slice",
        ], "members' cgroups: a socket of another network namespace (a container) is held; not the bypass slice's, the parent's or the root's")
        #expect(attachments.first { $0.cgroup == "vpn.slice/vpn-work.slice" }?.settings.programs == [.socketCreate, .egress, .connect4, .connect6],
                "the mark, the guard and port 853's refusal: DNS itself is routed (DNSRouting)")
        #expect(attachments.first { $0.cgroup == "vpn.slice/vpn-home.slice" }?.settings.programs == [.socketCreate, .egress],
                "without domain rules port 853 is left alone")
        #expect(attachments.first?.settings.programs == [.pathGuard], "the root: its path guard only, no mark (vpnd's and the tunnels' sockets are there)")
        #expect(Planner.plan(Policy(profiles: [work, home]), facts: facts).pathGuard == PathGuard(depth: 1, known: [100: true, 10: false]))
    }

    @Test func aCgroupMadeAgainIsAnotherAttachment() {
        let policy = Policy(profiles: [profile("work", tunnel: "wg0", index: 1)])
        let before = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])).socketPrograms
        let after = Planner.plan(policy, facts: RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 333])).socketPrograms
        #expect(before.map(\.id) == [101] && after.map(\.id) == [333])
        #expect(Planner.plan(policy, facts: RuntimeFacts()).socketPrograms.isEmpty, "a cgroup that does not exist has no programs")
    }

    /// A trusted network's `disconnect` leaves members' DNS to the host's resolver, as all
    /// their traffic goes direct (port 853 too); the mark and the guard stay.
    @Test func disconnectStopsOnlyTheDNSRules() {
        var work = profile("work", tunnel: "wg0", index: 1)
        work.bypassDomains = [try! DomainPattern("bank.example")]
        work.trusted = [TrustedRule(match: TrustedMatch(gatewayMAC: "02:00:5e:00:53:0a"), action: .disconnect,
                                    location: SourceLocation(file: "/p/t.toml", line: 2, column: 1))]
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101])
        facts.trusted["work"] = TrustedVerdict(action: .disconnect, rule: 1)
        let settings = Planner.plan(Policy(profiles: [work]), facts: facts).socketPrograms.first?.settings
        #expect(settings == SocketSettings(mark: 0x0100_0000, mask: mask, guardMarks: [0x0100_0000], guardNamespace: true))
    }

    /// Where vpnd follows names (resolveSockets, on 6.7+): a member's cgroups, joined ones
    /// too, send its resolved lookups to the profile's socket; the parent, the bypass slice
    /// and a profile stepping aside on a trusted network do not.
    @Test func membersFollowTheirNames() {
        let work = profile("work", tunnel: "wg0", index: 1)
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-work.slice": 101], cgroupsAlongParent: ["vpn.slice": 100])
        facts.joinedCgroups["user.slice/vpn-work.slice"] = RuntimeFacts.JoinedCgroup(profile: "work", id: 200)
        facts.resolveSockets = ["work": "/run/vpnexec/resolve/work"]
        let attachments = Planner.plan(Policy(profiles: [work]), facts: facts).socketPrograms
        #expect(attachments.filter { $0.settings.resolveSocket == "/run/vpnexec/resolve/work" }.map(\.cgroup) == ["user.slice/vpn-work.slice", "vpn.slice/vpn-work.slice"])
        #expect(attachments.first { $0.cgroup == "vpn.slice/vpn-work.slice" }?.settings.programs == [.socketCreate, .egress, .unixConnect])
        #expect(attachments.first { $0.cgroup == "vpn.slice" }?.settings.resolveSocket == nil)
        facts.trusted["work"] = TrustedVerdict(action: .disconnect, rule: 1)
        #expect(Planner.plan(Policy(profiles: [work]), facts: facts).socketPrograms.allSatisfy { $0.settings.resolveSocket == nil },
                "on a trusted network the host's resolver answers, as for port 53")
    }

    /// The programs' data as the kernel reads it: what vpnd writes is what it reads back.
    @Test func storageRoundTrips() {
        let settings = SocketSettings(mark: 0x0100_0000, mask: mask, requireMark: false, guardMarks: [0x0100_0000, 0x0500_0000],
                                      refuseEncryptedDNS: true, unmarkedOnly: false, guardPath: true, guardNamespace: true)
        var storage = SocketStorage(settings: settings, owner: 0x1122_3344_5566_7788)
        storage.root = 4242
        storage.guardDrops = 3
        storage.encryptedDNSRefusals = 9
        storage.foreignDrops = 7
        let bytes = storage.bytes
        #expect(bytes.count == SocketStorage.size)
        #expect(Array(bytes[12...14]) == [0, 0, 24], "once the DNS rewrite's port, now unused; the mask's shift")
        #expect(bytes[8] == 2 | 8 | 32 | 64, "flags: guard the mark, refuse encrypted DNS, guard the path, guard the namespace")
        #expect(bytes[72] == 7, "packets of another network namespace dropped, after the root's id")
        #expect(bytes[48] == 0b0010_0010, "a bit per profile's mark index (1 and 5)")
        #expect(SocketStorage(bytes: bytes) == storage)
        #expect(SocketStorage(bytes: Array(bytes.dropLast())) == nil)

        var names = SocketStorage(settings: SocketSettings(mark: 0x0100_0000, mask: mask, resolveSocket: "/run/vpnexec/resolve/work"), owner: 1)
        (names.namesRedirected, names.nscdRefused) = (5, 2)
        let written = names.bytes
        #expect(written[8] == 128, "flags: follow names")
        #expect(Array(written[80..<106]) == Array("/run/vpnexec/resolve/work\0".utf8), "the path at 80, NUL-padded to 64 bytes")
        #expect(written[144] == 5 && written[152] == 2)
        #expect(SocketStorage(bytes: written) == names)
    }
}

/// A removed profile's cgroup with processes left in it is held by its own programs:
/// new sockets refused, every packet of the old ones dropped, with or without a policy.
@Suite struct LeftBehindPlanTests {
    @Test func aRemovedProfilesCgroupGetsNoMarkAndNoWayOut() {
        var facts = RuntimeFacts(cgroupIDs: ["vpn.slice/vpn-home.slice": 102], cgroupsAlongParent: ["vpn.slice": 100])
        facts.leftBehind = ["vpn.slice/vpn-work.slice": 101]
        for policy in [Policy(profiles: [profile("home", tunnel: "tun0", index: 2)]), Policy(profiles: [])] {
            let held = Planner.plan(policy, facts: facts).socketPrograms.first { $0.cgroup == "vpn.slice/vpn-work.slice" }
            #expect(held == SocketProgramAttachment(cgroup: "vpn.slice/vpn-work.slice", id: 101,
                                                    settings: SocketSettings(mark: 0, mask: 0x7f00_0000, requireMark: true, guardMarks: [])))
            #expect(held?.settings.programs == [.socketCreate, .egress])
        }
        #expect(RuntimeFacts.profileName(ofSlice: "vpn-work.slice") == "work")
        #expect(RuntimeFacts.profileName(ofSlice: "vpn-.slice") == nil && RuntimeFacts.profileName(ofSlice: "user.slice") == nil)
    }

    /// The storage of a guard that takes no mark: its bits are all clear, and it drops
    /// what a socket with any mark sends (the removed profile's included).
    @Test func aGuardWithNoMarksHasNoBits() {
        let bytes = SocketStorage(settings: SocketSettings(mark: 0, mask: 0x7f00_0000, requireMark: true, guardMarks: []), owner: 1).bytes
        #expect(bytes[8] == 1 | 2, "requireMark and guardMark set")
        #expect(Array(bytes[48..<64]) == [UInt8](repeating: 0, count: 16))
    }
}

@Suite struct ForeignNamespacesTests {
    /// `seen`'s value as the programs write it: packets, then the process, little-endian.
    @Test func aSeenValueReads() {
        let value: [UInt8] = [3, 1, 0, 0, 0, 0, 0, 0, 0xd2, 0x04, 0, 0, 0, 0, 0, 0]
        #expect(ForeignNamespaces.Seen(cookie: 5671, value: value) == ForeignNamespaces.Seen(cookie: 5671, packets: 259, process: 1234))
        #expect(ForeignNamespaces.Seen(cookie: 1, value: Array(value.dropLast())) == nil)
        // Now with the cgroup (an earlier vpnd's 16 bytes above read with none).
        let withCgroup = value + [0x39, 0x30, 0, 0, 0, 0, 0, 0]
        #expect(ForeignNamespaces.Seen(cookie: 5671, value: withCgroup) == ForeignNamespaces.Seen(cookie: 5671, packets: 259, process: 1234, cgroup: 12345))
    }

    /// `allowed`'s value: the namespace's id, then its profile's index, little-endian; an
    /// earlier vpnd's 4-byte value (1) says nothing.
    @Test func aPlaceRoundTrips() {
        let place = ForeignNamespaces.Place(namespace: 7, profileIndex: 258)
        #expect(place.bytes == [7, 0, 0, 0, 2, 1, 0, 0])
        #expect(ForeignNamespaces.Place(bytes: place.bytes) == place)
        #expect(ForeignNamespaces.Place(bytes: [1, 0, 0, 0]) == nil)
    }
}
