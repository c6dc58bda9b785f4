import BuildVersion
import CLinux
import Launch
import Descriptors
import Glibc

/// vpnexec runs once per launched application, so it parses its three options by hand:
/// a process start without the argument-parser library is about a millisecond faster.
enum VPNExec {
    static let synopsis = """
        vpnexec [--socket PATH] (-p|--profile) NAME [--] COMMAND [ARGS...]
               vpnexec [--socket PATH] --bypass [--] COMMAND [ARGS...]
        """

    /// After a usage error: the message, the synopsis and where the rest is, as vpnctl's
    /// argument parser says its own (not the whole help on stderr).
    static func usageError(_ message: String) -> String {
        "vpnexec: \(message)\nUsage: \(synopsis)\n  See 'vpnexec --help' for more information.\n"
    }

    static let usage = """
        USAGE: \(synopsis)

        Run a command inside a VPN profile: its connections (and its children's) leave
        through the profile's tunnel. vpnexec asks vpnd to place this process in the
        profile's cgroup, then execs COMMAND with its arguments and environment untouched;
        the exit status is the command's. vpnexec needs and gains no privilege: vpnd checks
        the caller against the profile's users and groups.

        With --bypass the command runs outside every profile (vpn-bypass.slice): direct, even
        in system mode, for the users and groups the policy's [system] bypass names.

        Before it execs, one warning line on stderr each (the command runs all the same) when
        the profile's tunnel is down or missing (the killswitch holds the command's connections
        until it is back), and when COMMAND is a browser (firefox, chromium, ...) that already
        runs for you outside the profile (the launch would open a window in that instance).

        OPTIONS:
          -p, --profile NAME   the profile to run in (also -pNAME, --profile=NAME)
          --bypass             run outside every profile
          --socket PATH        vpnd's control socket (default: $VPNEXEC_SOCKET or \(ControlSocket.defaultPath))
          --version            show the version
          -h, --help           show this help

        EXIT STATUS: the command's; 125 if vpnexec itself fails (a usage error, vpnd not
        running, a refusal), 126 if COMMAND cannot be run, 127 if it is not found.

        """

    struct Arguments: Equatable {
        /// The profile, or nil for --bypass.
        var profile: String?
        var socket: String?
        var command: [String]
    }

    enum Parsed: Equatable {
        case run(Arguments)
        case help
        case version
        case usageError(String)
    }

    /// env, timeout and chroot's convention: the status of vpnexec's own failures can never
    /// be mistaken for the command's (126 and 127 keep the shell's meaning).
    static let ownFailure: Int32 = 125

    /// Options come first; the command starts at the first word that is not one of them
    /// (or after "--"), so `vpnexec -p work curl -v URL` passes `-v` to curl. As getopt,
    /// a short option's value may be attached (`-pwork`). A profile name never starts
    /// with "-", so `-p --bypass` or `-p --` is a missing name, not a profile called so.
    static func parse(_ words: [String]) -> Parsed {
        var profile: String?, socket: String?
        var bypass = false
        var index = 0
        func value(_ name: String) -> String? {
            index += 1
            return index < words.count ? words[index] : nil
        }
        while index < words.count {
            let word = words[index]
            if word == "--" { index += 1; break }
            if word == "-h" || word == "--help" { return .help }
            if word == "--version" { return .version }
            if word == "-p" || word == "--profile" {
                guard let v = value(word), !v.hasPrefix("-") else { return .usageError("\(word) needs a profile name") }
                profile = v
            } else if word.hasPrefix("-p") && !word.hasPrefix("--") {
                profile = String(word.dropFirst(2))
            } else if word.hasPrefix("--profile=") {
                profile = String(word.dropFirst("--profile=".count))
            } else if word == "--bypass" {
                bypass = true
            } else if word == "--socket" {
                guard let v = value(word) else { return .usageError("--socket needs a path") }
                socket = v
            } else if word.hasPrefix("--socket=") {
                socket = String(word.dropFirst("--socket=".count))
            } else if word.hasPrefix("-") && word.count > 1 {
                return .usageError("unknown option \(word)")
            } else {
                break
            }
            index += 1
        }
        if bypass && profile != nil { return .usageError("--bypass and --profile exclude each other") }
        if !bypass && (profile ?? "").isEmpty { return .usageError("missing --profile NAME (or --bypass)") }
        let command = Array(words[index...])
        guard !command.isEmpty else { return .usageError("missing command") }
        return .run(Arguments(profile: profile, socket: socket, command: command))
    }

    /// Sends the request with a pidfd of this process where the kernel has them; the pidfd
    /// is closed once sent, so the command does not inherit it.
    static func ask(profile: String?, socketPath: String) throws(ControlClientError) -> LaunchMessages.Answer {
        let request = LaunchMessages.request(profile: profile)
        let pidfd = vx_pidfd_open(getpid())
        guard pidfd >= 0 else { return try LaunchMessages.answer(ControlConnection.exchange(request, socketPath: socketPath)) }
        let me = FileDescriptor(adopting: pidfd)
        let answer = try ControlConnection.exchange(request, socketPath: socketPath, passing: me.number)
        me.close()
        return try LaunchMessages.answer(answer)
    }

    /// What the launch will not do as it seems to (LaunchWarnings), one line each on stderr;
    /// the command runs all the same. A running instance is looked for only when the command
    /// is a program that hands launches over (SingleInstanceProgram).
    static func warn(_ launch: LaunchReport, profile: String, command: [String]) {
        if let tunnel = launch.heldTunnel {
            writeStandardError(LaunchWarnings.heldTunnel(tunnel, profile: profile, command: command[0]))
        }
        guard let program = SingleInstanceProgram.launched(by: command[0]),
              !program.asksForSeparateInstance(Array(command.dropFirst())),
              let running = RunningInstances.outside(launch, program: program, uid: getuid(), own: getpid()) else { return }
        writeStandardError(LaunchWarnings.alreadyRunning(running.name, pid: running.pid, profile: profile,
                                                         separateInstance: program.separateInstance(command: command[0], profile: profile)))
    }

    static func main() -> Int32 {
        let arguments: Arguments
        switch parse(Array(CommandLine.arguments.dropFirst())) {
        case .help:
            writeStandardOutput(usage)
            return 0
        case .version:
            writeStandardOutput("vpnexec \(String(cString: vpnexec_build_version()))\n")
            return 0
        case let .usageError(message):
            writeStandardError(usageError(message))
            return ownFailure
        case let .run(parsed):
            arguments = parsed
        }
        let path = ControlSocket.path(option: arguments.socket, environment: ProcessInfoEnvironment.current)
        // vpnd moves the process a pidfd names, never a bare pid: on kernels without
        // SO_PEERPIDFD (before 6.5) this one, which vpnd checks against the connection.
        let response: LaunchMessages.Answer
        do {
            response = try ask(profile: arguments.profile, socketPath: path)
        } catch {
            writeStandardError("vpnexec: \(error)\n")
            return ownFailure
        }
        guard response.ok else {
            writeStandardError("vpnexec: \(response.message ?? "refused")\n")
            return ownFailure
        }
        if let launch = response.launch, let profile = arguments.profile {
            warn(launch, profile: profile, command: arguments.command)
        }
        let argv = arguments.command.map { strdup($0) } + [nil]
        execvp(arguments.command[0], argv)
        let code = errno
        writeStandardError("vpnexec: \(arguments.command[0]): \(SystemError("exec", code: code).reason)\n")
        // The shell's conventions: 127 not found, 126 found but not executable.
        return code == ENOENT ? 127 : 126
    }
}

exit(VPNExec.main())
