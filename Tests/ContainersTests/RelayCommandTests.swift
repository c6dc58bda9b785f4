@testable import Containers
import Testing

/// A relay's command line names the namespace it serves and its device there: rootless
/// podman's slirp4netns and pasta as they are started, and what is not read as one.
@Suite struct RelayCommandTests {
    @Test func slirp4netnsByPathAndByPid() {
        let podman = ["/usr/bin/slirp4netns", "--disable-host-loopback", "--mtu=65520", "--enable-sandbox", "--enable-seccomp", "--enable-ipv6", "-c",
                      "-r", "3", "-e", "4", "--netns-type=path", "/run/user/1000/netns/netns-5e6a", "tap0"]
        #expect(RelayCommand.parse(podman) == RelayCommand(program: "slirp4netns", target: .path("/run/user/1000/netns/netns-5e6a"), interface: "tap0"))
        #expect(RelayCommand.parse(["slirp4netns", "--netns-type", "path", "--mtu", "1500", "/var/run/netns/box", "tap1"])
            == RelayCommand(program: "slirp4netns", target: .path("/var/run/netns/box"), interface: "tap1"))
        #expect(RelayCommand.parse(["slirp4netns", "--configure", "4242"]) == RelayCommand(program: "slirp4netns", target: .process(4242), interface: "tap0"),
                "a pid, and the default device")
        #expect(RelayCommand.parse(["slirp4netns", "-a", "/tmp/api.sock", "--", "4242", "tap0"])?.target == .process(4242))
        #expect(RelayCommand.parse(["slirp4netns", "--netns-type=path", "relative", "tap0"]) == nil)
        #expect(RelayCommand.parse(["slirp4netns", "not-a-pid", "tap0"]) == nil)
        #expect(RelayCommand.parse(["slirp4netns", "--mtu"]) == nil, "an option without its value")
        #expect(RelayCommand.parse(["slirp4netns", "1", "tap0", "extra"]) == nil)
    }

    @Test func pastaByItsNetnsOption() {
        #expect(RelayCommand.parse(["/usr/bin/pasta", "--config-net", "-t", "none", "--netns", "/run/user/1000/netns/netns-1", "-I", "eth0"])
            == RelayCommand(program: "pasta", target: .path("/run/user/1000/netns/netns-1"), interface: "eth0"))
        #expect(RelayCommand.parse(["pasta.avx2", "--netns=box", "--ns-ifname=tap0"])
            == RelayCommand(program: "pasta", target: .path("/run/netns/box"), interface: "tap0"), "a name is /run/netns's")
        #expect(RelayCommand.parse(["pasta", "--config-net", "-4", "4242"]) == RelayCommand(program: "pasta", target: .process(4242), interface: nil))
        #expect(RelayCommand.parse(["pasta", "--netns", "box", "--", "sh"]) == nil, "a namespace and a command at once is no command line of pasta's")
    }

    /// `pasta --config-net -- CMD` as a user runs it: the namespace is its child's. An
    /// option's value is not taken for the command, nor a word of the command for an option.
    @Test func pastaRunningACommand() {
        let child = RelayCommand(program: "pasta", target: .child, interface: nil)
        #expect(RelayCommand.parse(["pasta", "-f", "--config-net", "--", "sh", "-c", "ip route; --netns x"]) == child)
        #expect(RelayCommand.parse(["pasta", "--config-net", "-t", "8080", "--dns-forward", "10.0.2.3", "firefox"]) == child)
        #expect(RelayCommand.parse(["pasta", "-fI", "tap1", "--log-file=/tmp/log", "bash"]) == RelayCommand(program: "pasta", target: .child, interface: "tap1"))
        #expect(RelayCommand.parse(["pasta", "-Itap2", "-4", "--", "4242"]) == RelayCommand(program: "pasta", target: .child, interface: "tap2"),
                "after -- a number is a command")
        #expect(RelayCommand.parse(["pasta", "--config-net"]) == child, "with no command pasta runs a shell")
        #expect(RelayCommand.parse(["pasta", "--config-net", "-t"]) == nil, "an option missing its value")
        #expect(RelayCommand.parse(["passt", "--socket", "/tmp/passt.socket"]) == nil, "passt, a VM's relay, serves no namespace")
    }

    @Test func otherProgramsAreNoRelays() {
        #expect(RelayCommand.parse(["socat", "TUN:10.0.0.1/24", "-"]) == nil)
        #expect(RelayCommand.parse([]) == nil)
    }

    /// The relay of each namespace: one naming it and one of its devices (any, for a
    /// command line that names none), the lowest pid first; else the one relay whose
    /// namespace vpnd cannot see that can be its (its device, its user), when that namespace
    /// is the only one it can be for.
    @Test func theRelayOfEachNamespace() {
        func relay(_ pid: Int32, _ interface: String?, namespace: Int32? = nil, unseen: Bool = false, uid: UInt32? = 1000) -> RelayFinder.Relay {
            RelayFinder.Relay(pid: pid, command: RelayCommand(program: "slirp4netns", target: .path("/run/user/1000/netns/n\(pid)"), interface: interface),
                              namespace: namespace, unseen: unseen, uid: uid)
        }
        let named = [relay(30, "tap0", namespace: 5), relay(20, "tap0", namespace: 6), relay(10, "tap9", namespace: 5), relay(40, nil, namespace: 7)]
        let paired = RelayFinder.pair([.init(namespace: 5, interfaces: ["tap0"], uid: 1000), .init(namespace: 6, interfaces: ["tap0"], uid: nil),
                                       .init(namespace: 7, interfaces: ["eth0"], uid: nil), .init(namespace: 8, interfaces: ["tap1"], uid: nil)], relays: named)
        #expect(paired.mapValues { "\($0.relay.pid) \($0.match)" } == [5: "30 named", 6: "20 named", 7: "40 named"])
        // Rootless podman's: the file is podman's mount namespace's.
        let podman = RelayFinder.Relayed(namespace: 9, interfaces: ["tap0"], uid: 1000)
        #expect(RelayFinder.pair([podman], relays: [relay(50, "tap0", unseen: true)])[9].map { "\($0.relay.pid) \($0.match)" } == "50 alone")
        #expect(RelayFinder.pair([podman], relays: [relay(50, "tap0", unseen: true), relay(51, "tap0", unseen: true)])[9] == nil, "two it can be")
        #expect(RelayFinder.pair([podman], relays: [relay(50, "tap0", unseen: true, uid: 1001)])[9] == nil, "another user's")
        #expect(RelayFinder.pair([podman], relays: [relay(50, "tap1", unseen: true)])[9] == nil, "another device")
        #expect(RelayFinder.pair([podman], relays: [relay(50, "tap0")])[9] == nil, "a namespace vpnd sees, with no id: no member's")
        #expect(RelayFinder.pair([podman, .init(namespace: 10, interfaces: ["tap0"], uid: nil)], relays: [relay(50, "tap0", unseen: true)]).isEmpty,
                "one relay two namespaces can have")
        #expect(RelayFinder.pair([podman, .init(namespace: 10, interfaces: ["tap0"], uid: nil)], relays: [relay(50, "tap0", unseen: true), relay(60, "tap0", namespace: 10)])
            .mapValues { "\($0.relay.pid) \($0.match)" } == [9: "50 alone", 10: "60 named"], "the other named")
    }
}
