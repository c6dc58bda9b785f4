/// What a container's cgroup says it is: the runtime that made it and its name there, as
/// `docker ps`, `podman ps` and `machinectl` show them. Runtimes name the cgroup of a
/// container's processes after it when systemd is their cgroup manager (docker's and
/// podman's `--cgroup-parent=vpn-work.slice`, a machine registered with machined), and a
/// unit put in a profile's slice (`Slice=vpn-work.slice` with `PrivateNetwork=`) is named by
/// its unit. Pure: a path in, a name or nil out.
public struct ContainerName: Hashable, Sendable {
    /// "docker", "podman", "machine" (systemd-machined's: nspawn, libvirt), "container" (a
    /// runtime's cgroup named by a bare container id, docker's cgroupfs driver), "unit".
    public var runtime: String
    /// The container's short id (12 digits, as `docker ps` shows it), the machine's name,
    /// or the unit's.
    public var name: String

    public init(runtime: String, name: String) {
        self.runtime = runtime
        self.name = name
    }

    /// The name the innermost component of `cgroup` that a runtime made says; else the unit
    /// right below the deepest profile slice (`vpn-NAME.slice`); else nil (a process placed
    /// by vpnexec, nspawn's `payload` under `--keep-unit`).
    public init?(cgroup: String) {
        let components = cgroup.split(separator: "/").map(String.init)
        for component in components.reversed() {
            if let found = Self.runtime(component) {
                self = found
                return
            }
        }
        guard let slice = components.lastIndex(where: { $0.hasPrefix("vpn-") && $0.hasSuffix(".slice") }), slice + 1 < components.count,
              [".service", ".scope"].contains(where: components[slice + 1].hasSuffix) else { return nil }
        self.init(runtime: "unit", name: components[slice + 1])
    }

    private static func runtime(_ component: String) -> ContainerName? {
        for (prefix, runtime) in [("docker-", "docker"), ("libpod-conmon-", "podman"), ("libpod-", "podman"), ("cri-containerd-", "containerd"), ("crio-", "cri-o")] {
            if let id = unit(component, prefix: prefix, suffix: ".scope"), isContainerID(id) {
                return ContainerName(runtime: runtime, name: String(id.prefix(12)))
            }
        }
        if let machine = unit(component, prefix: "machine-", suffix: ".scope"), !machine.isEmpty {
            return ContainerName(runtime: "machine", name: unescape(machine))
        }
        return isContainerID(component) ? ContainerName(runtime: "container", name: String(component.prefix(12))) : nil
    }

    private static func unit(_ component: String, prefix: String, suffix: String) -> String? {
        guard component.hasPrefix(prefix), component.hasSuffix(suffix), component.count > prefix.count + suffix.count else { return nil }
        return String(component.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// A runtime's container id: 64 hexadecimal digits.
    private static func isContainerID(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// systemd's unit name escaping undone: `\x2d` is a `-` of the name (machined's
    /// `machine-qemu\x2d1\x2dlab.scope` is machine `qemu-1-lab`).
    static func unescape(_ text: String) -> String {
        var bytes: [UInt8] = []
        var rest = Substring(text).utf8[...]
        while let first = rest.first {
            if first == UInt8(ascii: "\\"), rest.count >= 4, rest.dropFirst().first == UInt8(ascii: "x"),
               let value = UInt8(String(decoding: rest.dropFirst(2).prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                rest = rest.dropFirst(4)
            } else {
                bytes.append(first)
                rest = rest.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
