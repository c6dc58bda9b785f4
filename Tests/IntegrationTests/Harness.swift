import Control
import Foundation
import NetTestSupport
import Testing

/// The built executables (vpnd, vpnexec, vpnctl), copied where an unprivileged test
/// user can run them whatever the checkout's permissions.
/// Where the copies live for this test process; removed when it exits.
private let sharedBinaries = "/tmp/vx-bin-\(getpid())"

enum Binaries {
    static let directory: String = {
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var candidate = runner.deletingLastPathComponent()
        // The test bundle may sit inside a .xctest directory.
        while !FileManager.default.fileExists(atPath: candidate.appendingPathComponent("vpnd").path) && candidate.path != "/" {
            candidate = candidate.deletingLastPathComponent()
        }
        let built = candidate.path
        let shared = sharedBinaries
        atexit { try? FileManager.default.removeItem(atPath: sharedBinaries) }
        try? FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        for name in ["vpnd", "vpnexec", "vpnctl", "vpn-server"] {
            let target = shared + "/" + name
            try? FileManager.default.removeItem(atPath: target)
            try? FileManager.default.copyItem(atPath: built + "/" + name, toPath: target)
            chmod(target, 0o755)
        }
        return shared
    }()

    static func path(_ name: String) throws -> String {
        let path = directory + "/" + name
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestEnvironmentError("\(name) was not built next to the tests (looked in \(directory)); run `swift build` first")
        }
        return path
    }
}

/// vpnd running inside the client namespace with a policy directory, control socket and
/// cgroup parent of this test's own.
final class DaemonHarness: @unchecked Sendable {
    let topology: Topology
    let policyDirectory: String
    let socketPath: String
    let cgroupParent: String
    let cleanup: Cleanup
    private(set) var process: BackgroundProcess?
    /// Runs vpnd through this command (e.g. a seccomp wrapper), inside the namespace.
    var launcher: [String] = []
    /// More vpnd options (e.g. --resolv-conf).
    var extraArguments: [String] = []

    init(topology: Topology, policy: String, cleanup: Cleanup) throws {
        self.topology = topology
        self.cleanup = cleanup
        let base = "/tmp/vx-\(topology.tag)"
        policyDirectory = base + "/policy.d"
        socketPath = base + "/vpnd.sock"
        cgroupParent = "vxtest-\(topology.tag).slice"
        try FileManager.default.createDirectory(atPath: policyDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        chmod(base, 0o755)
        cleanup.add("remove \(base)") { try? FileManager.default.removeItem(atPath: base) }
        try TestCgroups.own(cgroupParent, cleanup: cleanup)
        try writePolicy(policy)
    }

    func writePolicy(_ text: String, file: String = "10-test.toml") throws {
        let path = policyDirectory + "/" + file
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
    }

    var arguments: [String] {
        get throws {
            // The test process is in the initial network namespace, which has exec events.
            topology.client.enter + launcher + [try Binaries.path("vpnd"), "--policy-dir", policyDirectory,
                                                "--socket", socketPath, "--cgroup-parent", cgroupParent,
                                                "--initial-netns", "/proc/\(getpid())/ns/net"] + extraArguments
        }
    }

    /// Starts vpnd and waits until it answers.
    @discardableResult
    func start() throws -> BackgroundProcess {
        let process = try BackgroundProcess(try arguments, cleanup: cleanup)
        self.process = process
        try eventually("vpnd to answer on \(socketPath)") {
            guard process.isRunning else { throw TestEnvironmentError("vpnd exited: \(process.output)") }
            return (try? ControlClient.send(.status, socketPath: socketPath))?.ok == true
        }
        return process
    }

    func status() throws -> StatusReport {
        let response = try ControlClient.send(.status, socketPath: socketPath)
        guard let status = response.status else { throw TestEnvironmentError("no status: \(response)") }
        return status
    }

    /// vpnctl with this daemon's socket.
    func vpnctl(_ arguments: [String]) throws -> CommandResult {
        try Command.status([try Binaries.path("vpnctl")] + arguments, environment: ["VPNEXEC_SOCKET": socketPath, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
    }

    /// `vpnexec` in the client namespace, as root or as a given user; `command` may be
    /// empty to get the prefix only.
    func vpnexec(profile: String, user: String? = nil, _ command: [String]) throws -> [String] {
        asUser(user) + [try Binaries.path("vpnexec"), "--socket", socketPath, "-p", profile, "--"] + command
    }

    /// `vpnctl` in the client namespace, as root or as a given user.
    func vpnctl(user: String?, _ arguments: [String]) throws -> CommandResult {
        try Command.status(asUser(user) + [try Binaries.path("vpnctl"), "--socket", socketPath] + arguments)
    }

    /// The prefix that runs a command in the client namespace as `user` (root if nil).
    func asUser(_ user: String?) -> [String] {
        topology.client.enter + (user.map(TestUser.become) ?? [])
    }

    /// Our kernel state in the client namespace (the nft ruleset, all rules, and every
    /// route vpnexec owns, in any table), for byte-for-byte comparisons. What counters
    /// count is left out: traffic moves them (the tunnel's own keepalives count as its
    /// transport), not vpnd.
    func kernelState() throws -> String {
        let client = topology.client
        let state = try [["nft", "list", "ruleset"], ["ip", "-4", "rule"], ["ip", "-6", "rule"],
                         ["ip", "-4", "route", "show", "table", "all", "proto", "118"],
                         ["ip", "-6", "route", "show", "table", "all", "proto", "118"]]
            .map { try client.run($0) }.joined(separator: "\n----\n")
        return state.replacing(/packets \d+ bytes \d+/, with: "packets - bytes -")
    }
}

enum TestCgroups {
    /// A killed run leaves its tree and the processes in it (vpnd, servers): the next run
    /// kills them and removes the tree (TestOwners).
    static let owners = TestOwners("cgroups")
    static let sweepOnce: Void = owners.sweep { name in
        guard let root = try? cgroupRoot() + "/" + name else { return }
        try? "1".write(toFile: root + "/cgroup.kill", atomically: false, encoding: .utf8)
        _ = try? eventually("the processes of \(name) to die") {
            let events = try? String(contentsOfFile: root + "/cgroup.events", encoding: .utf8)
            return events == nil || events!.contains("populated 0")
        }
        try? removeTree(name)
    }

    /// Records this process as the owner of `relative` and removes the tree when the test ends.
    static func own(_ relative: String, cleanup: Cleanup) throws {
        sweepOnce
        try owners.record(relative)
        cleanup.add("remove test cgroups") {
            try removeTree(relative)
            owners.forget(relative)
        }
    }

    /// Removes a cgroup subtree (children first); processes must be gone.
    static func removeTree(_ relative: String) throws {
        let root = try cgroupRoot() + "/" + relative
        guard FileManager.default.fileExists(atPath: root) else { return }
        let children = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        for child in children where (try? FileManager.default.attributesOfItem(atPath: root + "/" + child)[.type] as? FileAttributeType) == .typeDirectory {
            try removeTree(relative + "/" + child)
        }
        guard rmdir(root) == 0 else { throw TestEnvironmentError("rmdir \(root): errno \(errno)") }
    }

    static func cgroupRoot() throws -> String {
        let text = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields[dash + 1] == "cgroup2" { return String(fields[4]) }
        }
        throw TestEnvironmentError("no cgroup2 mount in /proc/self/mountinfo")
    }
}

/// A user the test creates (and deletes) to run vpnexec unprivileged.
final class TestUser: @unchecked Sendable {
    let name: String

    /// The prefix that runs a command as `user`. setpriv execs with root's capabilities
    /// still in effect, so its PATH search would pick commands the user cannot run (seen:
    /// a shim under /root, mode 0700); env searches PATH as the user.
    static func become(_ user: String) -> [String] {
        ["setpriv", "--reuid", user, "--regid", user, "--init-groups", "/usr/bin/env"]
    }

    init(_ name: String, groups: [String] = [], cleanup: Cleanup) throws {
        self.name = name
        var arguments = ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group"]
        if !groups.isEmpty { arguments += ["--groups", groups.joined(separator: ",")] }
        try Command.run(arguments + [name])
        cleanup.add("delete user \(name)") { try Command.run(["userdel", name]) }
    }
}

final class TestGroup: @unchecked Sendable {
    let name: String
    init(_ name: String, cleanup: Cleanup) throws {
        self.name = name
        try Command.run(["groupadd", name])
        cleanup.add("delete group \(name)") { try Command.run(["groupdel", name]) }
    }
}

extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
