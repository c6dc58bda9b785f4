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
        #expect(RelayCommand.parse(["pasta", "--config-net", "4242"]) == nil, "a target given otherwise is not read")
    }

    @Test func otherProgramsAreNoRelays() {
        #expect(RelayCommand.parse(["socat", "TUN:10.0.0.1/24", "-"]) == nil)
        #expect(RelayCommand.parse([]) == nil)
    }

    /// The relay of a namespace: one naming it and one of its devices (any, for a command
    /// line that names none), the lowest pid first.
    @Test func theRelayOfANamespace() {
        let relays = [
            RelayFinder.Relay(pid: 30, command: RelayCommand(program: "slirp4netns", target: .process(1), interface: "tap0"), namespace: 5),
            RelayFinder.Relay(pid: 20, command: RelayCommand(program: "slirp4netns", target: .process(2), interface: "tap0"), namespace: 6),
            RelayFinder.Relay(pid: 10, command: RelayCommand(program: "slirp4netns", target: .process(3), interface: "tap9"), namespace: 5),
            RelayFinder.Relay(pid: 40, command: RelayCommand(program: "pasta", target: .path("/run/netns/x"), interface: nil), namespace: 7),
        ]
        #expect(RelayFinder.relay(of: 5, interfaces: ["tap0"], among: relays)?.pid == 30)
        #expect(RelayFinder.relay(of: 6, interfaces: ["tap0"], among: relays)?.pid == 20)
        #expect(RelayFinder.relay(of: 7, interfaces: ["eth0"], among: relays)?.pid == 40)
        #expect(RelayFinder.relay(of: 6, interfaces: ["tap1"], among: relays) == nil)
        #expect(RelayFinder.relay(of: 8, interfaces: ["tap0"], among: relays) == nil)
    }
}
