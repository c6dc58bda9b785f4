import Containers
import Testing

/// A container's name from its cgroup's path, as each runtime lays it out under a profile's
/// slice (systemd as the cgroup manager; docker's cgroupfs driver).
struct ContainerNameTests {
    static let id = "4f1c2d3e5a6b7c8d9e0f11223344556677889900aabbccddeeff001122334455"

    @Test(arguments: [
        ("vpn.slice/vpn-work.slice/docker-\(id).scope", "docker", "4f1c2d3e5a6b"),
        ("vpn.slice/vpn-work.slice/libpod-\(id).scope", "podman", "4f1c2d3e5a6b"),
        // podman's container running systemd: its processes one level down.
        ("vpn.slice/vpn-work.slice/libpod-\(id).scope/container", "podman", "4f1c2d3e5a6b"),
        ("vpn.slice/vpn-work.slice/libpod-conmon-\(id).scope", "podman", "4f1c2d3e5a6b"),
        ("machine.slice/vpn-work.slice/machine-box.scope/payload", "machine", "box"),
        ("vpn.slice/vpn-work.slice/machine-qemu\\x2d1\\x2dlab.scope", "machine", "qemu-1-lab"),
        ("vpn.slice/vpn-work.slice/\(id)", "container", "4f1c2d3e5a6b"),
        ("vpn.slice/vpn-work.slice/lab.service", "unit", "lab.service"),
        ("user.slice/user-1000.slice/user@1000.service/app.slice/vpn-work.slice/torrent.scope/sub", "unit", "torrent.scope"),
        ("payload/vpn-work.slice/docker-\(id).scope", "docker", "4f1c2d3e5a6b"),
        // Not a runtime's id: the unit below the slice.
        ("vpn.slice/vpn-work.slice/docker-12ab.scope/x", "unit", "docker-12ab.scope"),
    ])
    func aRuntimesCgroupNamesItsContainer(cgroup: String, runtime: String, name: String) {
        #expect(ContainerName(cgroup: cgroup) == ContainerName(runtime: runtime, name: name))
    }

    @Test(arguments: [
        "vpn.slice/vpn-work.slice",
        // nspawn --keep-unit under vpnexec: nothing names it.
        "vpn.slice/vpn-work.slice/payload",
        "system.slice/docker-12ab.scope/x",
        "system.slice/docker-\(id.uppercased()).scope",
        "system.slice/machine-.scope",
        "system.slice/lab.service",
        "",
    ])
    func nothingNamesIt(cgroup: String) {
        #expect(ContainerName(cgroup: cgroup) == nil, "\(String(describing: ContainerName(cgroup: cgroup)))")
    }
}
