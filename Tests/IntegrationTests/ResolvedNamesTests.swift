import Foundation
import NetTestSupport
import Testing

/// systemd-resolved 252 and nss-resolve from Debian's packages, run as a plain process in a
/// mount namespace of the test's own (a tmpfs on /run/systemd, its user added to a copy of
/// /etc/passwd, `hosts: resolve` in nsswitch.conf: no fallback to port 53), in the client's
/// network namespace, asking `upstream` (the host's resolver, on the physical link).
/// With `bus`, a system bus of its own there too: dbus-daemon (the host's, as root) on
/// /run/dbus/system_bus_socket (a tmpfs), with Debian's default policy, resolved's policy
/// file from its package (resolved owns org.freedesktop.resolve1 as systemd-resolve) and
/// `bus`'s policies after it.
final class SystemdResolved {
    let holder: BackgroundProcess
    let packages: String
    let work: String

    init(in namespace: NetworkNamespace, upstream: String, bus: [String]? = nil, cleanup: Cleanup) throws {
        packages = try DebianPackages.unpacked(["systemd-resolved", "libnss-resolve"])
        let work = NSTemporaryDirectory() + "vx-\(uniqueTag())-resolved"
        self.work = work
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        cleanup.add("remove \(work)") { try? FileManager.default.removeItem(atPath: work) }
        let pidFile = work + "/pid", busPidFile = work + "/bus.pid"
        var startBus = ""
        if let bus {
            try FileManager.default.createDirectory(atPath: work + "/system.d", withIntermediateDirectories: true)
            for (index, policy) in bus.enumerated() {
                try "<busconfig>\(policy)</busconfig>\n".write(toFile: work + "/system.d/\(50 + index)-vx.conf", atomically: true, encoding: .utf8)
            }
            try Self.busConfig(policies: ["\(packages)/usr/share/dbus-1/system.d", work + "/system.d"]).write(toFile: work + "/bus.conf", atomically: true, encoding: .utf8)
            // Without the descriptors the shell inherited: dbus-daemon keeps what it is given, and
            // one of those is how Foundation sees the holder end (the test hung in waitUntilExit).
            startBus = "(setsid python3 -c 'import os, sys; os.closerange(3, 1 << 20); os.execvp(sys.argv[1], sys.argv[1:])' "
                + "sh -c 'echo $$ > \(busPidFile); exec dbus-daemon --nofork --nopidfile --nosyslog --config-file=\(work)/bus.conf' < /dev/null > \(work)/bus.log 2>&1 &)\n"
                // resolved finds its bus at start (and gets its name then).
                + "for i in $(seq 200); do [ -S /run/dbus/system_bus_socket ] && break; sleep 0.05; done"
            cleanup.add("stop dbus-daemon") {
                if let pid = (try? String(contentsOfFile: busPidFile, encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
            }
        }
        // As networkd in TunnelResolversTests: the namespace is held by a process of its own,
        // and resolved runs as no one's child.
        let setup = """
            set -e
            cp /etc/passwd /etc/group \(work)/
            echo 'systemd-resolve:x:991:991::/:/usr/sbin/nologin' >> \(work)/passwd
            echo 'systemd-resolve:x:991:' >> \(work)/group
            printf 'hosts: resolve\\n' > \(work)/nsswitch.conf
            mount --bind \(work)/passwd /etc/passwd
            mount --bind \(work)/group /etc/group
            mount --bind \(work)/nsswitch.conf /etc/nsswitch.conf
            mount -t tmpfs tmpfs /run/systemd
            if [ -d /run/dbus ]; then mount -t tmpfs tmpfs /run/dbus; fi
            mkdir -p /run/systemd/resolve /run/systemd/resolved.conf.d
            chown 991:991 /run/systemd/resolve
            printf '[Resolve]\\nDNS=\(upstream)\\nDNSStubListener=no\\nLLMNR=no\\nMulticastDNS=no\\nDNSSEC=no\\nCache=no\\n' > /run/systemd/resolved.conf.d/10-vx.conf
            \(startBus)
            (setsid sh -c 'echo $$ > \(pidFile); exec \(packages)/lib/systemd/systemd-resolved' < /dev/null > \(work)/log 2>&1 &)
            exec sleep 100000
            """
        holder = try BackgroundProcess(namespace.enter + ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup], cleanup: cleanup)
        cleanup.add("stop systemd-resolved") {
            if let pid = (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
        }
        try eventually("systemd-resolved to listen") {
            FileManager.default.fileExists(atPath: "/proc/\(holder.pid)/root/run/systemd/resolve/io.systemd.Resolve")
        }
    }

    /// Debian's system bus (/usr/share/dbus-1/system.conf) as root, without activation or
    /// syslog, with the policies in `policies`' directories.
    static func busConfig(policies: [String]) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <auth>EXTERNAL</auth>
          <listen>unix:path=/run/dbus/system_bus_socket</listen>
          <policy context="default">
            <allow user="*"/>
            <deny own="*"/>
            <deny send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_requested_reply="true" send_type="method_return"/>
            <allow send_requested_reply="true" send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
            <allow receive_type="signal"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
            <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
          </policy>
        \(policies.map { "  <includedir>\($0)</includedir>" }.joined(separator: "\n"))
        </busconfig>

        """
    }

    /// What resolved and its bus said so far.
    var log: String {
        ["log", "bus.log"].map { (try? String(contentsOfFile: work + "/" + $0, encoding: .utf8)) ?? "" }.joined(separator: "\n")
    }

    /// resolvectl from the package, in the namespace.
    func resolvectl(_ arguments: [String]) -> [String] {
        enter + ["\(packages)/usr/bin/resolvectl"] + arguments
    }

    /// What runs a command in the namespace, nss-resolve found by the C library.
    var enter: [String] {
        ["nsenter", "--mount=/proc/\(holder.pid)/ns/mnt", "--", "env", "LD_LIBRARY_PATH=\(packages)/usr/lib/x86_64-linux-gnu"]
    }
}

/// nscd from Debian's package, caching hosts (not persistent, shared), in a mount namespace
/// of the test's own: a tmpfs on /run for its socket (/var/run/nscd/socket), `hosts: files
/// dns`, resolv.conf naming `upstream` (the host's resolver).
final class NscdCache {
    let holder: BackgroundProcess

    init(in namespace: NetworkNamespace, upstream: String, cleanup: Cleanup) throws {
        let packages = try DebianPackages.unpacked(["nscd"])
        let work = NSTemporaryDirectory() + "vx-\(uniqueTag())-nscd"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        cleanup.add("remove \(work)") { try? FileManager.default.removeItem(atPath: work) }
        let setup = """
            set -e
            printf 'enable-cache hosts yes\\npersistent hosts no\\nshared hosts yes\\npositive-time-to-live hosts 600\\n' > \(work)/nscd.conf
            for db in passwd group services netgroup; do echo "enable-cache $db no" >> \(work)/nscd.conf; done
            printf 'hosts: files dns\\n' > \(work)/nsswitch.conf
            printf 'nameserver \(upstream)\\n' > \(work)/resolv.conf
            mount --bind \(work)/nsswitch.conf /etc/nsswitch.conf
            mount --bind \(work)/resolv.conf /etc/resolv.conf
            mount -t tmpfs tmpfs /run
            mkdir -p /run/nscd
            \(packages)/usr/sbin/nscd -f \(work)/nscd.conf
            exec sleep 100000
            """
        holder = try BackgroundProcess(namespace.enter + ["unshare", "--mount", "--propagation", "private", "sh", "-c", setup], cleanup: cleanup)
        cleanup.add("stop nscd") { [holder] in
            if let pid = (try? String(contentsOfFile: "/proc/\(holder.pid)/root/run/nscd/nscd.pid", encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
        }
        try eventually("nscd to listen") { FileManager.default.fileExists(atPath: "/proc/\(holder.pid)/root/run/nscd/socket") }
    }

    var enter: [String] { ["nsenter", "--mount=/proc/\(holder.pid)/ns/mnt", "--"] }
}

/// Names follow the app (issue 40): under `hosts: resolve`, every getaddrinfo() of a member
/// goes over varlink to systemd-resolved, a non-member that asks the host's resolver on the
/// physical link. The member's connect is sent to its profile's varlink server, which
/// answers through the profile's proxy: the tunnel's resolver answers, a route.domains
/// name's address is in its set when getent returns, a bypass.domains name's first
/// connection goes direct, and not one port-53 packet of the
/// member's names is on the physical link; a non-member's lookup of the same name is still
/// resolved's, answered by the host's resolver (seen there: the positive control). nscd's
/// socket is refused to the member: with nscd caching the host resolver's answer for a
/// non-member, the member gets the proxy's.
@Suite(.serialized) struct ResolvedNamesTests {
    /// The host's resolver, beyond the physical link (198.51.100.1): it knows
    /// tunneled.example otherwise than the tunnel's (192.0.2.99, not 192.0.2.10).
    static func hostResolver(_ s: Scenario, cleanup: Cleanup) throws {
        let hostLog = NSTemporaryDirectory() + "vx-\(uniqueTag())-host-dnsmasq.log", hostPid = NSTemporaryDirectory() + "vx-\(uniqueTag())-host-dnsmasq.pid"
        try s.net.wan.run(["dnsmasq", "--pid-file=\(hostPid)", "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=198.51.100.1",
                           "--user=root", "--host-record=tunneled.example,192.0.2.99", "--log-queries", "--log-facility=\(hostLog)"])
        cleanup.add("stop the host's dnsmasq") {
            if let pid = (try? String(contentsOfFile: hostPid, encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: hostPid)
            try? FileManager.default.removeItem(atPath: hostLog)
        }
    }

    @Test func aMembersLookupsThroughResolvedAreItsProfiles() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let s = try Scenario(cleanup: cleanup) { interfaces in
            """
            [profile.work]
            tunnel.interface = "\(interfaces[0])"
            dns = ["10.99.1.1"]
            bypass.domains = ["bank.example"]
            route.domains = ["*.corp.example"]
            """
        }
        // many.example has more addresses than a UDP answer holds (100 A records, about 1.6 KB
        // against the 1232 bytes offered): all of them come only when asked again over TCP.
        let many = (1...100).map { "--host-record=many.example,10.77.0.\($0)" }
        let tunnelResolver = try TunnelResolver(s, cleanup: cleanup, records: ["--host-record=tunneled.example,192.0.2.10"] + many)
        try Self.hostResolver(s, cleanup: cleanup)
        let resolved = try SystemdResolved(in: s.net.client, upstream: "198.51.100.1", cleanup: cleanup)
        do {
            try eventually("the profile's varlink server") { FileManager.default.fileExists(atPath: "/tmp/vx-\(s.net.tag)/resolve/work") }
        } catch {
            Issue.record("vpnd said: \(s.daemon.process?.output ?? "")")
            throw error
        }

        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let member = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["getent", "hosts", "tunneled.example"]))
        #expect(member.status == 0 && member.stdout.hasPrefix("192.0.2.10 "), "the profile's resolver's answer: \(member.stdout)\(member.stderr)")
        // The set is read by the member itself, right after its lookup returned.
        let listed = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["sh", "-c",
            "getent hosts www.corp.example && nft list set inet vpnexec route_dns4_work"]))
        #expect(listed.status == 0 && listed.stdout.hasPrefix("192.0.2.82 "), "\(listed.stdout)\(listed.stderr)")
        #expect(listed.stdout.contains("192.0.2.82 timeout") || listed.stdout.contains("192.0.2.82 expires"),
                "in route.domains' set when the answer came: \(listed.stdout)")
        // A bypass.domains name looked up that way (getaddrinfo: both families in one call)
        // goes direct on the first connection: the service sees the physical address.
        let bypassed = try Command.run(try s.daemon.vpnexec(profile: "work", resolved.enter + ["sh", "-c",
            "getent ahosts bank.example && python3 \(s.probe) tcp \(Topology.service4) 8080"])).split(separator: "\n").map(String.init)
        #expect(bypassed.contains { $0.hasPrefix("192.0.2.80 ") } && bypassed.last == Topology.clientAddress4, "\(bypassed)")
        let refused = try Command.status(try s.daemon.vpnexec(profile: "work", ["python3", "-c",
            "import socket,errno\ns=socket.socket(socket.AF_UNIX)\ntry: s.connect('/var/run/nscd/socket')\nexcept OSError as e: print(errno.errorcode[e.errno])"]))
        #expect(refused.stdout.trimmed == "EPERM", "nscd refused to a member: \(refused.stdout)\(refused.stderr)")
        let large = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["getent", "ahostsv4", "many.example"]))
        #expect(Set(large.stdout.split(separator: "\n").map { $0.prefix { $0 != " " } }).count == 100, "all 100, over TCP: \(large.stdout.prefix(300))\(large.stderr)")
        let reverse = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["getent", "hosts", "192.0.2.10"]))
        #expect(reverse.status == 0 && reverse.stdout.trimmed == "192.0.2.10      tunneled.example", "ResolveAddress: \(reverse.stdout)\(reverse.stderr)")
        // Ubuntu's and Fedora's line, port 53 behind resolved only when it is not there: the
        // member's getaddrinfo (Python's, both families) is the profile's all the same. The file
        // is written in place: it is bound over /etc/nsswitch.conf by its inode.
        try "hosts: resolve [!UNAVAIL=return] dns\n".write(toFile: resolved.work + "/nsswitch.conf", atomically: false, encoding: .utf8)
        let fallbackLine = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["python3", "-c",
            "import socket; print(sorted({a[4][0] for a in socket.getaddrinfo('tunneled.example', 80)}))"]))
        #expect(fallbackLine.stdout.trimmed == "['192.0.2.10']", "under resolve [!UNAVAIL=return] dns: \(fallbackLine.stdout)\(fallbackLine.stderr)")
        try "hosts: resolve\n".write(toFile: resolved.work + "/nsswitch.conf", atomically: false, encoding: .utf8)
        let leaked = try capture.packets()
        #expect(leaked.isEmpty, "none of the member's lookups on the physical link: \(leaked)")
        #expect(tunnelResolver.queries.contains { $0.hasPrefix("query[A] tunneled.example from \(s.tunnel.clientAddress4)") }, "\(tunnelResolver.queries)")

        // The positive control: the same lookup by a non-member is resolved's, on the link.
        let control = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let outside = try Command.status(s.net.client.enter + resolved.enter + ["getent", "hosts", "tunneled.example"])
        #expect(outside.status == 0 && outside.stdout.hasPrefix("192.0.2.99 "), "resolved's answer: \(outside.stdout)\(outside.stderr)")
        #expect(try control.count("udp port 53") > 0, "a non-member's lookup is seen on the link")
        // nscd: a non-member's lookup fills its cache with the host resolver's answer; a
        // member's connect to it is refused, so glibc asks port 53 itself: the proxy's answer.
        let nscd = try NscdCache(in: s.net.client, upstream: "198.51.100.1", cleanup: cleanup)
        let cached = try Command.status(s.net.client.enter + nscd.enter + ["getent", "hosts", "tunneled.example"])
        #expect(cached.status == 0 && cached.stdout.hasPrefix("192.0.2.99 "), "nscd's: \(cached.stdout)\(cached.stderr)")
        let uncached = try Command.status(try s.daemon.vpnexec(profile: "work", nscd.enter + ["getent", "hosts", "tunneled.example"]))
        #expect(uncached.status == 0 && uncached.stdout.hasPrefix("192.0.2.10 "), "not nscd's cache but the proxy: \(uncached.stdout)\(uncached.stderr)")

        // The profile's socket answers its members only: a non-member that connects to it
        // directly is closed unanswered (it must not fill the profile's sets).
        let direct = try Command.status(s.net.client.enter + ["python3", "-c", """
            import socket
            s = socket.socket(socket.AF_UNIX); s.connect("/tmp/vx-\(s.net.tag)/resolve/work")
            try:
                s.sendall(b'{"method":"io.systemd.Resolve.ResolveHostname","parameters":{"name":"www.corp.example"}}\\0')
                print("answered" if s.recv(1000) else "closed")
            except (ConnectionResetError, BrokenPipeError): print("closed")
            """])
        #expect(direct.stdout.trimmed == "closed", "a non-member is not answered: \(direct.stdout)\(direct.stderr)")

        let names = try #require(try s.daemon.status().profiles[0].dns?.names)
        #expect(names.socket == "/tmp/vx-\(s.net.tag)/resolve/work" && names.failure == nil, "\(names)")
        #expect(names.redirected >= 5 && names.calls >= 5 && names.answered >= 5 && names.nscdRefused >= 1 && names.refused == 1, "\(names)")

        // vpnd killed: the program still sends the member's connect to the profile's socket,
        // where no one answers; the lookup fails, and nothing goes to resolved or the link.
        let slice = "\(try TestCgroups.cgroupRoot())/\(s.daemon.cgroupParent)/vpn-work.slice"
        s.daemon.process?.kill9()
        let held = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let failed = try Command.status(s.net.client.enter + ["sh", "-c", "echo $$ > \(slice)/cgroup.procs && exec \"$@\"", "member"]
            + resolved.enter + ["getent", "hosts", "other.corp.example"])
        #expect(failed.status != 0 && failed.stdout.isEmpty, "no answer while vpnd is down: \(failed.stdout)\(failed.stderr)")
        let stillResolved = try Command.status(s.net.client.enter + resolved.enter + ["getent", "hosts", "tunneled.example"])
        #expect(stillResolved.stdout.hasPrefix("192.0.2.99 "), "a non-member's lookup is resolved's: \(stillResolved.stdout)\(stillResolved.stderr)")
        #expect(try held.packets("udp port 53 and host 198.51.100.1").count > 0, "the non-member's, seen (control)")
        #expect(try held.packets().allSatisfy { !$0.contains("other.corp.example") }, "the member's name nowhere on the link while vpnd is down")
    }

    /// A profile without `dns` on an interface whose servers only systemd-resolved holds
    /// (`resolvectl dns IFACE 10.99.1.1`, as NetworkManager or wg-quick's helper set them):
    /// vpnd cannot see resolved's link record (a tmpfs over /run/systemd/resolve/netif in a
    /// mount namespace of vpnd's and vpnctl's own, as where the directory's mode 0700 keeps
    /// it out), asks resolved over its system bus, and says so; a member's getaddrinfo
    /// (nss-resolve, varlink) is answered by that server through the tunnel. The same
    /// member's `resolvectl query` goes over D-Bus to resolved, a non-member, which answers
    /// from the host's resolver, asked on the physical link (docs/limitations.md); a user
    /// whom a D-Bus policy denies send_destination org.freedesktop.resolve1 gets an error
    /// from resolvectl instead (the workaround), while its getaddrinfo still resolves.
    @Test func aTunnelsServersFromResolvedOverDBusAndAMembersBusCalls() throws {
        let cleanup = Cleanup()
        defer { cleanup.run() }
        let user = try TestUser("vxrb\(uniqueTag().suffix(6))", cleanup: cleanup)
        let s = try Scenario(cleanup: cleanup, start: false) { "[profile.work]\ntunnel.interface = \"\($0[0])\"\nusers = [\"\(user.name)\"]\ngroups = [\"root\"]\n" }
        let interface = s.tunnel.clientInterface
        let tunnelResolver = try TunnelResolver(s, cleanup: cleanup, records: ["--host-record=tunneled.example,192.0.2.10"])
        try Self.hostResolver(s, cleanup: cleanup)
        let resolved = try SystemdResolved(in: s.net.client, upstream: "198.51.100.1", bus: [
            "<policy user=\"\(user.name)\"><deny send_destination=\"org.freedesktop.resolve1\"/></policy>",
        ], cleanup: cleanup)
        let index = try #require(Int(try s.net.client.run(["ip", "-o", "link", "show", "dev", interface]).prefix { $0 != ":" }))
        try eventually("resolved on its bus to take the link's DNS", seconds: 20) {
            let set = try Command.status(s.net.client.enter + resolved.resolvectl(["dns", interface, "10.99.1.1"]))
            guard set.status == 0 else { throw TestEnvironmentError("resolvectl dns: \(set.stdout)\(set.stderr); resolved: \(resolved.log)") }
            return true
        }
        // Only resolved's own servers answer names of no link's domain: which scope answers
        // the member's resolvectl query is then not a race.
        try Command.run(s.net.client.enter + resolved.resolvectl(["default-route", interface, "false"]))
        let record = "/proc/\(resolved.holder.pid)/root/run/systemd/resolve/netif/\(index)"
        try eventually("resolved to write the link's record") { ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").contains("SERVERS=10.99.1.1") }
        let hidden = ["nsenter", "--mount=/proc/\(resolved.holder.pid)/ns/mnt", "--", "unshare", "--mount", "--propagation", "private",
                      "sh", "-c", "mount -t tmpfs tmpfs /run/systemd/resolve/netif && exec \"$@\"", "hidden"]
        s.daemon.launcher = hidden
        s.daemon.extraArguments = ["--initial-netns", "/proc/self/ns/net"]

        let check = try Command.status(s.net.client.enter + hidden + [try Binaries.path("vpnctl"), "check", s.daemon.policyDirectory])
        #expect(check.status == 0 && check.stdout.contains("profile work: no dns, its members ask \(interface)'s DNS servers: now 10.99.1.1 (systemd-resolved over D-Bus, link \(index))"),
                "\(check.stdout)\(check.stderr)")
        try s.daemon.start()
        try eventually("vpnd to ask resolved") { try s.daemon.status().profiles[0].dns?.serversFrom == "systemd-resolved-dbus" }
        let dns = try #require(try s.daemon.status().profiles[0].dns)
        #expect(dns.servers == ["10.99.1.1"] && dns.serversLink == Int32(index) && dns.serversFile == nil, "\(dns)")
        #expect(try s.daemon.vpnctl(["status"]).stdout.contains("  dns       proxy: resolvers 10.99.1.1 (from systemd-resolved over D-Bus, link \(index)); answered "))
        #expect(s.daemon.process?.output.contains("DNS proxy of profile work: resolvers 10.99.1.1 (systemd-resolved over D-Bus, link \(index))") == true,
                "\(s.daemon.process?.output ?? "")")
        try eventually("the profile's varlink server") { FileManager.default.fileExists(atPath: "/tmp/vx-\(s.net.tag)/resolve/work") }

        let capture = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let member = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.enter + ["getent", "hosts", "tunneled.example"]))
        #expect(member.status == 0 && member.stdout.hasPrefix("192.0.2.10 "), "the tunnel's resolver's answer: \(member.stdout)\(member.stderr)")
        #expect(tunnelResolver.queries.contains { $0.hasPrefix("query[A] tunneled.example from \(s.tunnel.clientAddress4)") }, "through the tunnel: \(tunnelResolver.queries)")
        let calls = try #require(try s.daemon.status().profiles[0].dns?.names).calls
        #expect(try capture.packets().isEmpty, "none of the member's lookups on the physical link")

        // The member's call on resolved's D-Bus API: resolved answers from the host's resolver,
        // which it asks on the physical link; vpnd's names server is not asked.
        let onLink = try Capture(on: s.net.clientUplink, in: s.net.client, filter: "port 53", cleanup: cleanup)
        let query = try Command.status(try s.daemon.vpnexec(profile: "work", resolved.resolvectl(["query", "tunneled.example"])))
        #expect(query.status == 0 && query.stdout.contains("tunneled.example: 192.0.2.99"), "resolved's answer: \(query.stdout)\(query.stderr)")
        #expect(try onLink.packets("udp port 53 and host 198.51.100.1").contains { $0.contains("tunneled.example") }, "asked on the physical link")
        #expect(try s.daemon.status().profiles[0].dns?.names?.calls == calls, "not vpnd's")

        // The workaround: a D-Bus policy denies the user resolved's API; its getaddrinfo is the profile's.
        // (Into resolved's namespace as root first: nsenter needs it.)
        let asUser = s.net.client.enter + resolved.enter + TestUser.become(user.name) + [try Binaries.path("vpnexec"), "--socket", s.daemon.socketPath, "-p", "work", "--"]
        let denied = try Command.status(asUser + ["\(resolved.packages)/usr/bin/resolvectl", "query", "tunneled.example"])
        #expect(denied.status != 0 && denied.stderr.contains("tunneled.example: resolve call failed: "), "\(denied.stdout)\(denied.stderr)")
        let own = try Command.status(asUser + ["getent", "hosts", "tunneled.example"])
        #expect(own.status == 0 && own.stdout.hasPrefix("192.0.2.10 "), "\(own.stdout)\(own.stderr)")
    }
}
