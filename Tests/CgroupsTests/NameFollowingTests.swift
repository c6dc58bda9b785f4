import BPF
import Cgroups
import Descriptors
import Foundation
import NetTestSupport
import SocketPrograms
import Testing

/// The unix-connect program against this kernel (6.7+): a member's connect to resolved's
/// varlink socket lands on the cgroup's resolve socket, whichever way the address is
/// written (the path alone, or with its NUL); nscd's socket is refused under both names; a
/// longer path and a non-member's connect are untouched; the counts are the kernel's.
@Suite(.serialized) struct NameFollowingTests {
    static let probe = """
    import errno, os, socket, sys
    target, procs = sys.argv[1], sys.argv[2]
    server = socket.socket(socket.AF_UNIX); server.bind(target); server.listen(8)
    # Into the cgroup only now: a socket belongs to the cgroup its maker was in, and what
    # ran before (a shim in front of python3, the interpreter's start) is not the probe's.
    with open(procs, "w") as f: f.write(str(os.getpid()))
    def say(*words): print(*words, flush=True)
    for path in ("/run/systemd/resolve/io.systemd.Resolve", b"/run/systemd/resolve/io.systemd.Resolve\\0",
                 "/run/systemd/resolve/io.systemd.ResolveX", "/var/run/nscd/socket", "/run/nscd/socket"):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            peer = s.getpeername()
            say("connected", peer.decode() if isinstance(peer, bytes) else peer)
        except OSError as error: say(errno.errorcode[error.errno])
    """

    @Test func lookupsOfAMemberGoToItsProfile() throws {
        try requireRoot()
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let net = try NetworkNamespace("vxnf\(uniqueTag())", cleanup: cleanup)
        let hierarchy = try CgroupHierarchy.system()
        let parent = "vxnf-\(uniqueTag()).slice", member = parent + "/vpn-work.slice", outside = parent + "/other.slice"
        let memberID = try hierarchy.create(member)
        _ = try hierarchy.create(outside)
        cleanup.add("remove cgroups") {
            for path in [member, outside, parent] { try? hierarchy.remove(path) }
        }
        let directory = "/tmp/vxnf-\(uniqueTag())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        cleanup.add("remove \(directory)") { try FileManager.default.removeItem(atPath: directory) }
        try Self.probe.write(toFile: directory + "/probe.py", atomically: true, encoding: .utf8)
        let target = directory + "/work"

        let owner = try net.within { try SocketProgramSet.currentOwner() }
        do {
            let set = try SocketProgramSet(owner: owner, root: try #require(hierarchy.id(of: "")))
            #expect(set.followsNames, "Linux 6.7+ has BPF_CGROUP_UNIX_CONNECT: \(set.namesFailure.map { "\($0)" } ?? "")")
            let settings = SocketSettings(mark: 0x0100_0000, mask: 0x7f00_0000, resolveSocket: target)
            #expect(settings.programs.contains(.unixConnect))
            let cgroup = try FileDescriptor.open(hierarchy.absolute(member), O_RDONLY | O_DIRECTORY)
            for program in settings.programs { try set.attach(program, to: cgroup, path: member) }
            try set.write(settings, cgroup: memberID)
        }
        // The probe joins the cgroup itself, after its start: the submitted CI counted 34 nscd
        // refusals against the probe's 2, from what ran before it (users looked up by name).
        let run = { (cgroup: String, socket: String) throws -> [String] in
            try Command.run(net.enter + ["python3", "-I", "-S", "\(directory)/probe.py", socket, hierarchy.absolute(cgroup) + "/cgroup.procs"])
                .split(separator: "\n").map(String.init)
        }
        let output = try run(member, target)
        #expect(output == ["connected \(target)", "connected \(target)", "ENOENT", "EPERM", "EPERM"], "\(output)")
        let other = try run(outside, directory + "/other")
        #expect(other == ["ENOENT", "ENOENT", "ENOENT", "ENOENT", "ENOENT"], "\(other)")
        let stored = try #require(AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner).storage(of: member, id: memberID))
        #expect(stored.namesRedirected == 2 && stored.nscdRefused == 2, "\(stored)")
        #expect(stored.settings.resolveSocket == target)
        let cgroup = try FileDescriptor.open(hierarchy.absolute(member), O_RDONLY | O_DIRECTORY)
        _ = AdoptedSocketPrograms(hierarchy: hierarchy.mountPoint, owner: owner).detach(member, cgroup: cgroup)
    }

    /// The kernel's types as this kernel's BTF has them, and a malformed blob refused.
    @Test func kernelTypes() throws {
        let btf = try #require(FileManager.default.contents(atPath: "/sys/kernel/btf/vmlinux"))
        let types = try NameFollowingTypes(btf: Array(btf))
        #expect(types.setSunPath > 0 && types.castToKernelContext > 0 && types.readOnlyCast > 0 && types.sockaddrUn > 0)
        #expect(throws: ProgramError.btfSectionsOutOfBounds) { try KernelTypes(parsing: Array(btf.prefix(100)), wanted: ["sockaddr_un": .structure]) }
        #expect(throws: ProgramError.kernelLacks("no_such_function_here")) { try KernelTypes(parsing: Array(btf), wanted: ["no_such_function_here": .function]) }
    }
}
