import ArgumentParser
import Control
import Glibc

@main
struct VPNExec: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vpnexec",
        abstract: "Run a command inside a VPN profile: its connections (and its children's) leave through the profile's tunnel.",
        discussion: """
        vpnexec asks vpnd to place this process in the profile's cgroup, then execs the command \
        with its arguments and environment untouched; the exit status is the command's. \
        vpnexec needs and gains no privilege: vpnd checks the caller against the profile's users and groups.
        """)

    @Option(name: [.short, .long], help: "The profile to run in.")
    var profile: String

    @Option(help: "Control socket path (default: $VPNEXEC_SOCKET or \(ControlSocket.defaultPath)).")
    var socket: String?

    @Argument(parsing: .captureForPassthrough, help: "The command and its arguments.")
    var command: [String] = []

    func run() throws {
        var argv = command
        if argv.first == "--" { argv.removeFirst() }
        guard !argv.isEmpty else {
            throw ValidationError("missing command: vpnexec --profile NAME -- COMMAND [ARGS...]")
        }
        let path = ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current)
        let response: ControlResponse
        do {
            response = try ControlClient.send(.exec(profile: profile), socketPath: path)
        } catch {
            writeStandardError("vpnexec: \(error)\n")
            throw ExitCode(1)
        }
        guard response.ok else {
            writeStandardError("vpnexec: \(response.message ?? "refused")\n")
            throw ExitCode(1)
        }
        let cArguments = argv.map { strdup($0) } + [nil]
        execvp(argv[0], cArguments)
        let code = errno
        writeStandardError("vpnexec: \(argv[0]): \(String(cString: strerror(code)))\n")
        // The shell's conventions: 127 not found, 126 found but not executable.
        throw ExitCode(code == ENOENT ? 127 : 126)
    }
}
