/// What a userspace relay's command line says it serves: the network namespace it made its
/// TUN/TAP device in (a process's, by pid, or a namespace file's path) and the device's name
/// there. A relay's descriptors would say it for sure, but they are guarded like ptrace
/// (docs/limitations.md); its command line is anyone's to read, and rootless podman names
/// the namespace there: `slirp4netns ... --netns-type=path /run/user/1000/netns/netns-ID tap0`,
/// `pasta ... --netns /run/user/1000/netns/netns-ID`; pasta run by hand as
/// `pasta --config-net -- CMD` makes the namespace for CMD, which it runs as its child. Pure.
public struct RelayCommand: Hashable, Sendable {
    public enum Target: Hashable, Sendable {
        case process(Int32)
        case path(String)
        /// The namespace of the relay's child: pasta given a command makes a namespace,
        /// runs the command there as its child and stays in the foreground as its parent.
        case child
    }

    /// The program's name ("slirp4netns", "pasta").
    public var program: String
    public var target: Target
    /// The device's name in the namespace; nil: the command line does not say (pasta's
    /// default copies the host's interface name).
    public var interface: String?

    /// The programs read as relays, by their process's name (/proc/PID/comm: the file it
    /// runs). pasta is a link to passt, which on a CPU with AVX2 executes passt.avx2 again
    /// keeping its argv[0]: Debian's `pasta` runs as "passt.avx2" or "passt", and parse
    /// tells pasta from passt (a VM's relay, no namespace's) by argv[0].
    public static let programs: Set<String> = ["slirp4netns", "pasta", "pasta.avx2", "passt", "passt.avx2"]

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

    /// `pasta [OPTION]... --netns PATH|NAME`, as podman starts it (a NAME is /run/netns's);
    /// `pasta [OPTION]... PID`; `pasta [OPTION]... [--] COMMAND [ARG]...`, as a user runs it,
    /// whose namespace is its child's (pasta with neither a target nor a command runs a shell
    /// the same way). `-I IFNAME` names its device. The options that take a value are
    /// pasta's of Debian 12 (0.0~git20230309), whose values are skipped.
    static func pasta(_ arguments: [String]) -> RelayCommand? {
        let valuedShort: Set<Character> = ["l", "p", "P", "m", "a", "n", "M", "g", "i", "o", "D", "S", "s", "F", "t", "u", "I", "T", "U"]
        let valuedLong: Set<String> = ["--log-file", "--log-size", "--runas", "--pcap", "--pid", "--mtu", "--address", "--netmask", "--mac-addr",
                                       "--gateway", "--interface", "--outbound", "--outbound-if4", "--outbound-if6", "--dns", "--dns-forward",
                                       "--search", "--socket", "--fd", "--tcp-ports", "--udp-ports", "--ns-ifname", "--tcp-ns", "--udp-ns",
                                       "--userns", "--netns", "--ns-mac-addr"]
        var namespace: String?, interface: String?, positional: String?, command = false, index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                command = index < arguments.count
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                positional = argument
                break
            }
            var name = argument, value: String?
            if argument.hasPrefix("--") {
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    value = String(argument[argument.index(after: equals)...])
                } else if valuedLong.contains(argument) {
                    guard index < arguments.count else { return nil }
                    value = arguments[index]
                    index += 1
                }
            } else {
                // A cluster of flags ends at the first option that takes a value: the rest
                // of the word, or the next argument, is that value.
                for (offset, letter) in argument.dropFirst().enumerated() where valuedShort.contains(letter) {
                    name = "-" + String(letter)
                    let rest = String(argument.dropFirst(offset + 2))
                    if !rest.isEmpty {
                        value = rest
                    } else {
                        guard index < arguments.count else { return nil }
                        value = arguments[index]
                        index += 1
                    }
                    break
                }
            }
            switch name {
            case "--netns": namespace = value
            case "-I", "--ns-ifname": interface = value
            default: break
            }
        }
        if let namespace {
            guard !namespace.isEmpty, positional == nil, !command else { return nil }
            return RelayCommand(program: "pasta", target: .path(namespace.hasPrefix("/") ? namespace : "/run/netns/" + namespace), interface: interface)
        }
        if let positional, let pid = Int32(positional) {
            return pid > 0 && index == arguments.count ? RelayCommand(program: "pasta", target: .process(pid), interface: interface) : nil
        }
        return RelayCommand(program: "pasta", target: .child, interface: interface)
    }
}
