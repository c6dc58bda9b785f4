import Foundation
import NetTestSupport
import Testing

/// systemd-resolved 252 and nss-resolve from Debian's packages, run as a plain process in a
/// mount namespace of the test's own (a tmpfs on /run/systemd, its user added to a copy of
/// /etc/passwd, `hosts: resolve` in nsswitch.conf: no fallback to port 53), in the client's
/// network namespace, asking `upstream` (the host's resolver, on the physical link).
final class SystemdResolved {
    let holder: BackgroundProcess
    let packages: String

    init(in namespace: NetworkNamespace, upstream: String, cleanup: Cleanup) throws {
        packages = try DebianPackages.unpacked(["systemd-resolved", "libnss-resolve"])
        let work = NSTemporaryDirectory() + "vx-\(uniqueTag())-resolved"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        cleanup.add("remove \(work)") { try? FileManager.default.removeItem(atPath: work) }
        let pidFile = work + "/pid"
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
        // The host's resolver, beyond the physical link, knows the name otherwise.
        let hostLog = NSTemporaryDirectory() + "vx-\(uniqueTag())-host-dnsmasq.log", hostPid = NSTemporaryDirectory() + "vx-\(uniqueTag())-host-dnsmasq.pid"
        try s.net.wan.run(["dnsmasq", "--pid-file=\(hostPid)", "--no-resolv", "--no-hosts", "--bind-interfaces", "--listen-address=198.51.100.1",
                           "--user=root", "--host-record=tunneled.example,192.0.2.99", "--log-queries", "--log-facility=\(hostLog)"])
        cleanup.add("stop the host's dnsmasq") {
            if let pid = (try? String(contentsOfFile: hostPid, encoding: .utf8)).flatMap({ Int32($0.trimmed) }) { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: hostPid)
            try? FileManager.default.removeItem(atPath: hostLog)
        }
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
}
