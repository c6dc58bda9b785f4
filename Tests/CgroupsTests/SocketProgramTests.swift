import Cgroups
import Descriptors
import Foundation
import NetTestSupport
import SocketPrograms
import Testing

/// The socket programs against the kernel, in a network namespace and a cgroup tree of
/// the test's own: a member's socket is born marked, a socket that changed its mark loses
/// its packets, DNS over UDP and TCP is left to the routing (the namespace has none here:
/// DNSSteeringTests and the daemon's tests route it; no destination is rewritten), port 853
/// is refused, a cgroup below the parent without programs gets no socket; the attachments
/// outlive the loader, and a successor of the same namespace (and no other) finds them to
/// take over.
@Suite(.serialized) struct SocketProgramTests {
    static let mark: UInt32 = 0x0100_0000, mask: UInt32 = 0x7f00_0000

    static let probe = """
    import errno, socket, struct, sys
    def say(*words): print(*words, flush=True)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    say("mark", hex(struct.unpack("I", s.getsockopt(socket.SOL_SOCKET, 36, 4))[0]))
    for family, address in ((socket.AF_INET, "192.0.2.53"), (socket.AF_INET6, "2001:db8::53")):
        u = socket.socket(family, socket.SOCK_DGRAM)
        try: u.connect((address, 53)); say("udp connected", u.getpeername()[0])
        except OSError as error: say("udp", errno.errorcode[error.errno])
        t = socket.socket(family, socket.SOCK_STREAM); t.settimeout(3)
        try: t.connect((address, 53)); say("tcp connected", t.getpeername()[0])
        except OSError as error: say("tcp", errno.errorcode[error.errno])
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            e = socket.socket(family, kind)
            try: e.connect((address, 853)); say("853 connected")
            except OSError as error: say("853", errno.errorcode[error.errno])
    m = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    m.setsockopt(socket.SOL_SOCKET, 36, struct.pack("I", 0x7f000000))
    try: m.sendto(b"x", ("127.0.0.1", 9)); say("remarked sent")
    except OSError as error: say("remarked", errno.errorcode[error.errno])
    """

    @Test func membersAtTheirSockets() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try NetworkNamespace("vxsp\(uniqueTag())", cleanup: cleanup)
        let hierarchy = try CgroupHierarchy.system()
        let parent = "vxsp-\(uniqueTag()).slice", member = parent + "/vpn-work.slice", stray = parent + "/vpn-gone.slice"
        let memberID = try hierarchy.create(member), parentID = try hierarchy.id(of: parent)!, strayID = try hierarchy.create(stray)
        cleanup.add("remove cgroups") {
            for path in [member, stray, parent] { try? hierarchy.remove(path) }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vxsp-\(uniqueTag())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        cleanup.add("remove \(directory)") { try FileManager.default.removeItem(atPath: directory) }
        try Self.probe.write(toFile: directory + "/probe.py", atomically: true, encoding: .utf8)

        let owner = try net.within { try SocketProgramSet.currentOwner() }
        let hostOwner = try SocketProgramSet.currentOwner()
        #expect(owner != hostOwner, "the test namespace's cookie")
        do {
            let set = try SocketProgramSet(owner: owner, root: try #require(hierarchy.id(of: "")))
            let memberSettings = SocketSettings(mark: Self.mark, mask: Self.mask, guardMarks: [Self.mark], refuseEncryptedDNS: true)
            try Self.attach(set, memberSettings, to: member, id: memberID, hierarchy: hierarchy)
            try Self.attach(set, SocketSettings(mark: 0, mask: Self.mask, requireMark: true), to: parent, id: parentID, hierarchy: hierarchy)
        }
        // The set (its descriptors) is gone: the attachments are the kernel's.
        let output = try Self.run(directory + "/probe.py", in: member, net: net, hierarchy: hierarchy)
        #expect(output == [
            "mark 0x1000000",
            // Not rewritten: no route here for what the routing would steer.
            "udp ENETUNREACH", "tcp ENETUNREACH", "853 EPERM", "853 EPERM",
            "udp ENETUNREACH", "tcp ENETUNREACH", "853 EPERM", "853 EPERM",
            "remarked EPERM",
        ], "\(output)")
        let refused = try Command.status(net.enter + ["sh", "-c", "echo $$ > \(hierarchy.absolute(stray))/cgroup.procs && exec python3 -c 'import socket; socket.socket()'"])
        #expect(refused.status != 0 && refused.stderr.contains("Operation not permitted"), "a cgroup below the parent without programs: \(refused.stderr)")

        // A successor of the same namespace finds them, counters and all; another finds none.
        let adopted = AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner)
        #expect(Set(adopted.byCgroup[member]?.map(\.program) ?? []) == [.socketCreate, .egress, .connect4, .connect6])
        #expect(adopted.byCgroup[parent]?.map(\.program) == [.socketCreate])
        #expect(adopted.byCgroup[stray] == nil)
        // Another owner: not owner + 1, the cookie of the next namespace made, which a test
        // of the other runner may have made and given a vpnd (seen in CI); no namespace has
        // the cookie UInt64.max.
        #expect(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: .max).byCgroup.isEmpty)
        let counters = try #require(adopted.storage(of: member, id: memberID))
        #expect(counters.guardDrops >= 1 && counters.encryptedDNSRefusals == 4, "\(counters)")
        #expect(try #require(adopted.storage(of: parent, id: parentID)).socketRefusals >= 1)
        for (path, _) in [(member, memberID), (parent, parentID)] {
            let cgroup = try FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY)
            #expect(adopted.detach(path, cgroup: cgroup).isEmpty)
        }
        try "import socket, struct\nprint(hex(struct.unpack('I', socket.socket().getsockopt(1, 36, 4))[0]))\n".write(toFile: directory + "/mark.py", atomically: true, encoding: .utf8)
        #expect(try Self.run(directory + "/mark.py", in: member, net: net, hierarchy: hierarchy) == ["0x0"], "detached: born unmarked")
        #expect(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner).byCgroup.isEmpty)
        #expect(hierarchy.id(of: stray) == strayID)
    }

    private static func attach(_ set: SocketProgramSet, _ settings: SocketSettings, to path: String, id: UInt64, hierarchy: CgroupHierarchy) throws {
        let cgroup = try FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY)
        for program in settings.programs { try set.attach(program, to: cgroup, path: path) }
        try set.write(settings, cgroup: id)
    }

    private static func run(_ script: String, in cgroup: String, net: NetworkNamespace, hierarchy: CgroupHierarchy) throws -> [String] {
        try Command.run(net.enter + ["sh", "-c", "echo $$ > \(hierarchy.absolute(cgroup))/cgroup.procs && exec python3 \(script)"])
            .split(separator: "\n").map(String.init)
    }
}

/// Programs whose owner namespace is gone (a vpnd's, deleted without `vpnd --cleanup`) are
/// found and detached; those of a namespace that lives stay, whoever's they are.
@Suite(.serialized) struct OrphanProgramTests {
    @Test func programsOfAGoneNamespaceAreDetached() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let hierarchy = try CgroupHierarchy.system()
        let path = "vxorphan-\(uniqueTag()).slice"
        let id = try hierarchy.create(path)
        cleanup.add("remove \(path)") { try? hierarchy.remove(path) }
        let alive = try NetworkNamespace("vxol\(uniqueTag())", cleanup: cleanup)
        // The gone one is deleted by hand, as a namespace is without `vpnd --cleanup`.
        let gone = "vxog\(uniqueTag())"
        try Command.run(["ip", "netns", "add", gone])
        cleanup.add("delete netns \(gone)") { _ = try? Command.run(["ip", "netns", "delete", gone]) }
        func attach(in namespace: String) throws -> UInt64 {
            try NetworkNamespace.within(namespace) {
                let owner = try SocketProgramSet.currentOwner()
                let set = try SocketProgramSet(owner: owner, root: try #require(hierarchy.id(of: "")))
                let cgroup = try FileDescriptor.open(hierarchy.absolute(path), O_RDONLY | O_DIRECTORY)
                let settings = SocketSettings(mark: 0, mask: 0x7f00_0000, requireMark: false, guardPath: true)
                for program in settings.programs { try set.attach(program, to: cgroup, path: path) }
                try set.write(settings, cgroup: id)
                return owner
            }
        }
        let goneOwner = try attach(in: gone)
        let aliveOwner = try attach(in: alive.name)
        #expect(Set(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: goneOwner).byCgroup.keys) == [path])
        try Command.run(["ip", "netns", "delete", gone])

        let live = try #require(LiveNetworkNamespaces.cookies(), "every namespace read")
        #expect(live.contains(try SocketProgramSet.currentOwner()) && live.contains(aliveOwner))
        #expect(!live.contains(goneOwner), "a deleted namespace nobody holds is not live")
        let (detached, failures) = AdoptedSocketPrograms.detachOrphans(hierarchy: hierarchy, live: live)
        #expect(detached >= 1 && failures.isEmpty, "\(failures)")
        #expect(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: goneOwner).byCgroup.isEmpty, "the gone namespace's program detached")
        #expect(Set(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: aliveOwner).byCgroup.keys) == [path], "the live one's stays")
    }
}
