/// What a userspace relay's command line says it serves: the network namespace it made its
/// TUN/TAP device in (a process's, by pid, or a namespace file's path) and the device's name
/// there. A relay's descriptors would say it for sure, but they are guarded like ptrace
/// (docs/limitations.md); its command line is anyone's to read, and rootless podman names
/// the namespace there: `slirp4netns ... --netns-type=path /run/user/1000/netns/netns-ID tap0`,
/// `pasta ... --netns /run/user/1000/netns/netns-ID`. Pure.
public struct RelayCommand: Hashable, Sendable {
    public enum Target: Hashable, Sendable {
        case process(Int32)
        case path(String)
    }

    /// The program's name ("slirp4netns", "pasta").
    public var program: String
    public var target: Target
    /// The device's name in the namespace; nil: the command line does not say (pasta's
    /// default copies the host's interface name).
    public var interface: String?

    /// The programs read as relays, by their file's name (pasta ships an AVX2 build too).
    public static let programs: Set<String> = ["slirp4netns", "pasta", "pasta.avx2"]

    public init(program: String, target: Target, interface: String?) {
        self.program = program
        self.target = target
        self.interface = interface
    }

    /// Reads `arguments` (argv, the program first); nil when it is no relay vpnd knows or
    /// does not name its namespace.
    public static func parse(_ arguments: [String]) -> RelayCommand? {
        guard let first = arguments.first else { return nil }
        let program = String(first.split(separator: "/").last ?? "")
        switch program {
        case "slirp4netns": return slirp4netns(Array(arguments.dropFirst()))
        case "pasta", "pasta.avx2": return pasta(Array(arguments.dropFirst()))
        default: return nil
        }
    }

    /// `slirp4netns [OPTION]... PID|PATH [TAPNAME]` (TAPNAME defaults to tap0; the target is
    /// a path with `--netns-type=path`).
    static func slirp4netns(_ arguments: [String]) -> RelayCommand? {
        let valued: Set<String> = ["-e", "--exit-fd", "-r", "--ready-fd", "-m", "--mtu", "-a", "--api-socket", "--cidr", "--netns-type",
                                   "--userns-path", "--outbound-addr", "--outbound-addr6", "--macaddress", "--target-type"]
        var positional: [String] = [], byPath = false, index = 0, options = true
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if options && argument == "--" {
                options = false
            } else if options && argument.hasPrefix("-") && argument.count > 1 {
                var value: String?
                if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                    value = String(argument[argument.index(after: equals)...])
                    if argument[..<equals] != "--netns-type" { continue }
                } else if valued.contains(argument) {
                    guard index < arguments.count else { return nil }
                    value = arguments[index]
                    index += 1
                    if argument != "--netns-type" { continue }
                } else {
                    continue
                }
                byPath = value == "path"
            } else {
                positional.append(argument)
            }
        }
        guard let target = positional.first, positional.count <= 2 else { return nil }
        let interface = positional.count == 2 ? positional[1] : "tap0"
        if byPath { return target.hasPrefix("/") ? RelayCommand(program: "slirp4netns", target: .path(target), interface: interface) : nil }
        guard let pid = Int32(target), pid > 0 else { return nil }
        return RelayCommand(program: "slirp4netns", target: .process(pid), interface: interface)
    }

    /// `pasta ... --netns PATH|NAME [-I IFNAME]` (a NAME is /run/netns's), as podman starts
    /// it; a target given otherwise (a pid, a command to run) is not read.
    static func pasta(_ arguments: [String]) -> RelayCommand? {
        var namespace: String?, interface: String?, index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { break }
            for (names, slot) in [(["--netns"], 0), (["-I", "--ns-ifname"], 1)] {
                var value: String?
                if names.contains(argument), index < arguments.count {
                    value = arguments[index]
                    index += 1
                } else if let name = names.first(where: { $0.hasPrefix("--") && argument.hasPrefix($0 + "=") }) {
                    value = String(argument.dropFirst(name.count + 1))
                }
                guard let value else { continue }
                if slot == 0 { namespace = value } else { interface = value }
            }
        }
        guard let namespace, !namespace.isEmpty else { return nil }
        return RelayCommand(program: "pasta", target: .path(namespace.hasPrefix("/") ? namespace : "/run/netns/" + namespace), interface: interface)
    }
}
