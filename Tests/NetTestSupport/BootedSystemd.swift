import Cgroups
import Foundation

/// A Debian 12 root file system with systemd, for booting in a container: made once by
/// debootstrap (about a minute, from the Debian mirror) and kept under the package's .build,
/// beside the other build products, one tree per package list.
public enum SystemdRoot {
    /// What every booted test needs: systemd itself and the libraries our binaries link;
    /// man-db, for the package's pages; wireguard-tools, for the units that run `wg`. One
    /// root for all, made once (a debootstrap is a minute of the suite).
    public static let basePackages = ["systemd", "systemd-sysv", "dbus", "iproute2", "nftables", "libsodium23", "libnftnl11",
                                      "libmnl0", "libcap2", "libsystemd0", "libstdc++6", "man-db", "wireguard-tools"]

    /// The root's path, made first if missing. It is never changed afterwards: containers
    /// boot it with a throw-away overlay.
    public static func path(extra: [String] = []) throws -> String {
        let packages = Array(Set(basePackages + extra)).sorted()
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../.build/test-roots").standardized.path
        let root = directory + "/bookworm-\(digest(packages.joined(separator: ",")))"
        if FileManager.default.fileExists(atPath: root + "/usr/lib/systemd/systemd") { return root }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Built aside and renamed, so a failed or interrupted build is never booted.
        let partial = root + ".partial-\(uniqueTag())"
        defer { try? FileManager.default.removeItem(atPath: partial) }
        let result = try Command.status(["debootstrap", "--variant=minbase", "--include=\(packages.joined(separator: ","))",
                                         "bookworm", partial, "http://deb.debian.org/debian"])
        guard result.status == 0 else {
            throw TestEnvironmentError("debootstrap of a systemd root failed (it needs the Debian mirror): \(result.stderr.suffix(2000))")
        }
        try FileManager.default.moveItem(atPath: partial, toPath: root)
        return root
    }

    /// FNV-1a, as a name: only to tell package lists apart.
    static func digest(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }
}

/// With --keep-unit, systemd-nspawn makes the cgroups "payload" (the container, with the
/// tree a booted systemd makes in it: init.scope, system.slice, ...) and "supervisor"
/// (itself) in the cgroup it runs in, ours, and leaves them behind.
public enum NspawnCgroups {
    /// Those of them that do not exist yet are removed at cleanup (registered before the
    /// container starts, so that its stop runs first), deepest first.
    public static func removeAtCleanup(_ cleanup: Cleanup) throws {
        let hierarchy = try CgroupHierarchy.system()
        let own = CgroupHierarchy.cgroup(ofProcess: getpid()) ?? ""
        let made = ["payload", "supervisor"].map { own.isEmpty ? $0 : own + "/" + $0 }.filter { hierarchy.id(of: $0) == nil }
        cleanup.add("remove systemd-nspawn's cgroups") {
            func remove(_ cgroup: String) throws {
                for child in hierarchy.children(of: cgroup) { try remove(cgroup + "/" + child) }
                try hierarchy.remove(cgroup)
            }
            for cgroup in made { try remove(cgroup) }
        }
    }
}

/// A real systemd as PID 1, booted by systemd-nspawn in a network namespace of the test's
/// (PID 1 of the test machine is not systemd), for proving units: Type=notify, the
/// sandboxing options, restarts, the journal. The root is booted read-only under a tmpfs
/// overlay, so nothing a test does inside outlives it; files and binaries come in as binds.
/// Stopped (poweroff, then killed if it lingers) at cleanup.
public final class BootedSystemd: @unchecked Sendable {
    public struct Bind: Sendable {
        public var host: String
        public var container: String
        public var readOnly: Bool

        public init(_ host: String, at container: String? = nil, readOnly: Bool = true) {
            self.host = host
            self.container = container ?? host
            self.readOnly = readOnly
        }
    }

    let nspawn: BackgroundProcess
    /// The container's PID 1 as the host sees it: commands enter its namespaces through it.
    public let initPID: Int32

    /// Boots `root` with CAP_NET_ADMIN and a writable /proc/sys/net (DESIGN.md's recipe) and
    /// waits until systemd reports the boot finished.
    /// `systemCalls`: more system calls the container may make than systemd-nspawn's own
    /// filter allows (Debian 12's refuses Landlock's, for one).
    /// `bootArguments`: systemd's own command line in the container (read as a kernel
    /// command line: `systemd.wants=UNIT`, ...).
    public init(root: String, namespace: NetworkNamespace, binds: [Bind], cleanup: Cleanup, systemCalls: [String] = [],
                bootArguments: [String] = []) throws {
        try requireRoot()
        let arguments = ["systemd-nspawn", "--register=no", "--keep-unit", "-q", "--console=read-only", "-D", root,
                         "--volatile=overlay", "--boot", "--capability=CAP_NET_ADMIN,CAP_BPF", "--network-namespace-path=\(namespace.path)"]
            + (systemCalls.isEmpty ? [] : ["--system-call-filter=\(systemCalls.joined(separator: " "))"])
            + binds.map { "--bind\($0.readOnly ? "-ro" : "")=\($0.host):\($0.container)" } + bootArguments
        try NspawnCgroups.removeAtCleanup(cleanup)
        let nspawn = try BackgroundProcess(arguments, cleanup: cleanup, environment: [
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_NSPAWN_API_VFS_WRITABLE": "network",
            // cgroup v2 only, as Debian 12 and every current distribution boots (this host's
            // hybrid tree would leave the container hybrid, where user managers cannot start).
            "SYSTEMD_NSPAWN_UNIFIED_HIERARCHY": "1",
        ])
        self.nspawn = nspawn
        var found: Int32?
        try eventually("systemd-nspawn to start the container's systemd", seconds: 30) {
            guard nspawn.isRunning else { throw TestEnvironmentError("systemd-nspawn exited: \(nspawn.output.suffix(2000))") }
            found = Self.child(of: nspawn.pid, named: "systemd")
            return found != nil
        }
        initPID = found!
        cleanup.add("power the container off") { [self] in
            _ = try? run(["systemctl", "poweroff"])
            if !nspawn.waitForExit(seconds: 30) {
                // Killed, systemd-nspawn would leave the container's init (and its
                // children) running: end that first.
                kill(initPID, SIGKILL)
                nspawn.kill9()
            }
        }
        // Until its bus is up, systemctl cannot even ask; then --wait waits for the boot.
        var state = ""
        do {
            try eventually("the container's systemd to finish booting", seconds: 60) {
                state = try run(["systemctl", "is-system-running", "--wait"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                return state == "running" || state == "degraded"
            }
        } catch {
            throw TestEnvironmentError("the container's systemd did not finish booting (\(state)): \(nspawn.output.suffix(2000))")
        }
    }

    /// A command inside the container (all its namespaces), to completion.
    @discardableResult
    public func run(_ arguments: [String]) throws -> CommandResult {
        try Command.status(["nsenter", "-t", String(initPID), "-a"] + arguments)
    }

    /// `systemctl show -p NAME --value UNIT` for each name.
    public func properties(_ unit: String, _ names: [String]) throws -> [String: String] {
        var values: [String: String] = [:]
        for name in names { values[name] = try run(["systemctl", "show", "-p", name, "--value", unit]).stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
        return values
    }

    /// The boot log so far (systemd-nspawn's console), for failure messages.
    public var console: String { nspawn.output }

    static func child(of parent: Int32, named name: String) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { continue }
            let command = stat[stat.index(after: open)..<close]
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if command == name, fields.count > 1, Int32(fields[1]) == parent { return pid }
        }
        return nil
    }
}
