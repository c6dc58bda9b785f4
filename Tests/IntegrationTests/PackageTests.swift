import Foundation
import NetTestSupport
import Testing

/// The Debian package scripts/package builds from the tree, installed with dpkg into a fresh
/// Debian 12 root (the booted tests' debootstrapped root, under a throw-away overlay), used
/// there as an admin would, then purged: only the admin's policy is left.
@Suite(.serialized) struct PackageTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized.path

    /// The release build with the static Swift runtime (its own scratch directory, so it does
    /// not wait for this `swift test`'s lock on .build), packaged: the .deb's path.
    static func package(into directory: String) throws -> String {
        let built = try Command.status([repository + "/scripts/package", directory])
        try #require(built.status == 0, "scripts/package: \(built.stderr.suffix(3000))")
        let deb = built.stdout.trimmed
        #expect(deb.hasPrefix(directory + "/vpnexec_") && deb.hasSuffix(".deb"), "\(built.stdout)")
        return deb
    }

    @Test func installsWorksAndPurgesLeavingOnlyThePolicy() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let repository = Self.repository
        let tag = uniqueTag()
        let work = NSTemporaryDirectory() + "vx-\(tag)-package"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        cleanup.add("remove \(work)") { try? FileManager.default.removeItem(atPath: work) }

        let describe = try Command.run(["git", "-C", repository, "describe", "--tags", "--always", "--dirty"]).trimmed
        let deb = try Self.package(into: work)

        let lower = try SystemdRoot.path()
        let (upper, scratch, root) = (work + "/upper", work + "/scratch", work + "/root")
        for directory in [upper, scratch, root] { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        try Command.run(["mount", "-t", "overlay", "overlay", "-o", "lowerdir=\(lower),upperdir=\(upper),workdir=\(scratch)", root])
        cleanup.add("unmount \(root)") { try Command.run(["umount", root]) }
        try NspawnCgroups.removeAtCleanup(cleanup)
        // Not in /tmp, which systemd-nspawn covers with a tmpfs.
        try FileManager.default.copyItem(atPath: deb, toPath: root + "/root/vpnexec.deb")

        /// A command inside the root: its own mount, PID, UTS and network namespaces, /proc and /dev.
        func inside(_ command: String) throws -> CommandResult {
            try Command.status(["systemd-nspawn", "--register=no", "--keep-unit", "-q", "--pipe", "--private-network", "--machine=vx\(tag)", "-D", root,
                                "--capability=CAP_BPF", "--system-call-filter=bpf",
                                "--setenv=LC_ALL=C", "/bin/sh", "-c", command],
                               environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"])
        }
        func expectSuccess(_ command: String, _ check: (String) -> Bool = { _ in true }) throws {
            let result = try inside(command)
            #expect(result.status == 0 && check(result.stdout), "\(command): \(result.status)\n\(result.stdout)\(result.stderr)")
        }

        let installed = try inside("dpkg -i /root/vpnexec.deb")
        try #require(installed.status == 0, "dpkg -i: \(installed.stdout)\(installed.stderr)")
        let files = try inside("dpkg -L vpnexec").stdout.split(separator: "\n").map(String.init)
        for file in ["/usr/bin/vpnexec", "/usr/bin/vpnctl", "/usr/bin/vpnd", "/usr/bin/vpn-server", "/lib/systemd/system/vpnd.service",
                     "/lib/systemd/system/vpnd-early.service", "/lib/systemd/system/vpn.slice", "/lib/systemd/system/vpn-server@.service",
                     "/usr/share/man/man1/vpnexec.1.gz", "/usr/share/man/man5/vpnexec-policy.5.gz", "/usr/share/man/man8/vpnctl.8.gz",
                     "/usr/share/man/man8/vpnd.8.gz", "/usr/share/man/man8/vpn-server.8.gz",
                     "/usr/share/bash-completion/completions/vpnexec", "/usr/share/bash-completion/completions/vpnctl",
                     "/usr/share/zsh/vendor-completions/_vpnexec", "/usr/share/zsh/vendor-completions/_vpnctl",
                     "/usr/share/fish/vendor_completions.d/vpnexec.fish", "/usr/share/fish/vendor_completions.d/vpnctl.fish",
                     "/usr/share/doc/vpnexec/examples/10-work.toml", "/usr/share/doc/vpnexec/README.md", "/usr/share/doc/vpnexec/bench/README.md",
                     "/usr/share/doc/vpnexec/bench/results/wireguard.md", "/etc/vpnexec/policy.d"] {
            #expect(files.contains(file), "the package holds \(file)")
        }
        // Installed, nothing enabled or started; vpnexec gains no privilege.
        try expectSuccess("find /etc/systemd/system -name 'vpn*'") { $0.isEmpty }
        try expectSuccess("stat -c %a /usr/bin/vpnexec /usr/bin/vpnctl") { $0 == "755\n755\n" }
        try expectSuccess("ls -A /etc/vpnexec/policy.d") { $0.isEmpty }
        try expectSuccess("vpnexec --version") { $0 == "vpnexec \(describe)\n" }
        // Without a tag the bare commit (which may begin with a digit) sorts below any release.
        let tagged = try Command.status(["git", "-C", repository, "describe", "--tags", "--abbrev=0"]).status == 0
        try expectSuccess("dpkg-query -W -f '${Version}' vpnexec") {
            tagged ? $0.first?.isNumber == true : $0 == "0.0.0+git." + describe.replacingOccurrences(of: "-", with: "+")
        }
        try expectSuccess("vpnd --version && vpn-server --version") { $0 == "vpnd \(describe)\nvpn-server \(describe)\n" }
        try expectSuccess("man -w vpnexec && man -w 5 vpnexec-policy && man -w vpnctl") {
            $0 == "/usr/share/man/man1/vpnexec.1.gz\n/usr/share/man/man5/vpnexec-policy.5.gz\n/usr/share/man/man8/vpnctl.8.gz\n"
        }
        try expectSuccess("systemd-analyze verify vpnd.service vpnd-early.service vpn.slice vpn-server@wg0.service")
        try expectSuccess("grep -h ExecStart= /lib/systemd/system/vpnd.service /lib/systemd/system/vpn-server@.service") {
            $0.contains("ExecStart=/usr/bin/vpnd ") && $0.contains("ExecStart=/usr/bin/vpn-server ") && !$0.contains("/usr/local")
        }
        try expectSuccess("bash -c 'source /usr/share/bash-completion/completions/vpnexec && complete -p vpnexec'") { $0 == "complete -F _vpnexec vpnexec\n" }
        try expectSuccess("bash -c 'source /usr/share/bash-completion/completions/vpnctl && complete -p vpnctl'") { $0.hasSuffix(" vpnctl\n") }

        // The examples as an admin would check them: they name a host's users and groups and
        // a wg-quick file, which this fresh root gets first.
        let (key, _) = try WireGuardGo.keyPair()
        let (_, peer) = try WireGuardGo.keyPair()
        #expect(FileManager.default.createFile(atPath: root + "/etc/vpnexec/travel.conf", contents: Data("""
            [Interface]
            PrivateKey = \(key)
            Address = 10.80.0.2/24
            DNS = 10.80.0.1
            [Peer]
            PublicKey = \(peer)
            Endpoint = 192.0.2.1:51820
            AllowedIPs = 0.0.0.0/0
            """.utf8), attributes: [.posixPermissions: 0o600]))
        try expectSuccess("useradd alice && groupadd vpn-work && groupadd vpn-bypass")
        // work and streaming have no dns, and this root holds no DNS servers for wg0 or tun0:
        // each a warning; travel's file has a DNS = line.
        try expectSuccess("vpnctl check /usr/share/doc/vpnexec/examples/*.toml") {
            $0.hasPrefix("ok: 3 profiles work streaming travel\n") && $0.split(separator: "\n").count == 3
                && $0.contains("10-work.toml:10:1: warning: profile \"work\" has no dns: its members ask the DNS servers the host holds for wg0 ")
                && $0.contains("20-streaming.toml:4:1: warning: profile \"streaming\" has no dns: its members ask the DNS servers the host holds for tun0 ")
        }

        // The admin's policy, and vpnd's copy of the last one that applied (--state-dir).
        try expectSuccess("cp /usr/share/doc/vpnexec/examples/10-work.toml /etc/vpnexec/policy.d/ && mkdir -p /var/lib/vpnexec/policy.d "
                          + "&& cp /etc/vpnexec/policy.d/10-work.toml /var/lib/vpnexec/policy.d/")
        // Removing the package takes vpnd's rules, routes and table out of the kernel too.
        let rules = "{ ip -4 rule; ip -6 rule; } | grep -c 'lookup 7301'"
        try expectSuccess("vpnd --oneshot 2>/dev/null && \(rules) && dpkg --purge vpnexec >/dev/null && { \(rules) || true; }") { $0 == "2\n0\n" }
        try expectSuccess("dpkg -s vpnexec >/dev/null 2>&1 || echo gone") { $0 == "gone\n" }
        let left = files.filter { FileManager.default.fileExists(atPath: root + $0) }
        let shared = left.filter { FileManager.default.fileExists(atPath: lower + $0) }
        #expect(Set(left).subtracting(shared) == ["/etc/vpnexec", "/etc/vpnexec/policy.d"], "left after purge: \(left)")
        #expect(FileManager.default.fileExists(atPath: root + "/etc/vpnexec/policy.d/10-work.toml"), "the admin's policy stays")
        #expect(!FileManager.default.fileExists(atPath: root + "/var/lib/vpnexec"), "purge removes vpnd's state")
        #expect(shared.allSatisfy { var directory: ObjCBool = false; return FileManager.default.fileExists(atPath: root + $0, isDirectory: &directory) && directory.boolValue },
                "only directories other packages share are left: \(shared)")
    }

    /// Under a booted systemd, as an admin runs it: an upgrade restarts the running vpnd on
    /// the new binary; removing the package stops it and takes its rules out of the kernel.
    @Test func underSystemdAnUpgradeRestartsVpndAndRemovalStopsIt() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let tag = uniqueTag()
        let work = NSTemporaryDirectory() + "vx-\(tag)-booted-package"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        cleanup.add("remove \(work)") { try? FileManager.default.removeItem(atPath: work) }
        let deb = try Self.package(into: work)
        let namespace = try NetworkNamespace("vx\(tag)bp", cleanup: cleanup)
        let container = try BootedSystemd(root: try SystemdRoot.path(), namespace: namespace, binds: [.init(work, at: "/root/package")],
                                          cleanup: cleanup, systemCalls: ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "bpf"])
        func expectSuccess(_ command: String, _ check: (String) -> Bool = { _ in true }) throws {
            let result = try container.run(["/bin/sh", "-c", command])
            #expect(result.status == 0 && check(result.stdout), "\(command): \(result.status)\n\(result.stdout)\(result.stderr)")
        }
        let install = "dpkg -i /root/package/\(URL(fileURLWithPath: deb).lastPathComponent) >/dev/null"
        let rules = "{ ip -4 rule; ip -6 rule; } | grep -c 'lookup 7301' || true"
        try expectSuccess(install)
        try expectSuccess("systemctl is-active vpnd.service || true") { $0 == "inactive\n" }
        try expectSuccess("printf '[profile.work]\\ntunnel.interface = \"wg0\"\\nusers = [0]\\n' > /etc/vpnexec/policy.d/10-work.toml "
                          + "&& systemctl enable --now vpnd.service")
        try expectSuccess(rules) { $0 == "2\n" }
        let before = try container.properties("vpnd.service", ["MainPID"])["MainPID"]
        try expectSuccess(install)
        let after = try container.properties("vpnd.service", ["ActiveState", "MainPID"])
        #expect(after["ActiveState"] == "active" && after["MainPID"] != before, "the upgrade restarts vpnd: \(String(describing: before)) -> \(after)")
        try expectSuccess("dpkg -r vpnexec >/dev/null && systemctl is-active vpnd.service || true") { $0 == "inactive\n" }
        try expectSuccess(rules) { $0 == "0\n" }
    }
}
