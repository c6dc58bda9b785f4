import ArgumentParser
import BuildVersion
import Control
import Daemon
import Glibc
import Policy
import TrustedFiles
import ServiceSupport
import Launch

@main
struct VPND: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vpnd",
        abstract: "The vpnexec daemon: applies the policy (nftables, routing rules, cgroups) and serves vpnexec and vpnctl.",
        discussion: """
        Runs in the foreground and logs to stderr: lines that begin "vpnd: ", or under journald (stderr is \
        the stream JOURNAL_STREAM names) each with its <N> priority prefix. Stopping vpnd \
        leaves the kernel state in place, the killswitch included; `vpnctl teardown \
        --remove-killswitch` (or `vpnd --cleanup` when no daemon runs) removes it.
        """,
        version: "vpnd \(String(cString: vpnexec_build_version()))")

    /// Usage errors as every command of ours says its errors: "vpnd: ...".
    static var _errorPrefix: String { "vpnd: " }

    @Option(name: .customLong("policy-dir"), help: "Directory of *.toml policy files, read in name order.")
    var policyDirectory = PolicyDirectory.defaultPath

    @Option(help: "Control socket path (default: $VPNEXEC_SOCKET or \(ControlSocket.defaultPath)).")
    var socket: String?

    @Option(name: .customLong("cgroup-parent"), help: "Where profile cgroups live, relative to the cgroup2 mount.")
    var cgroupParent = "vpn.slice"

    @Option(name: .customLong("initial-netns"), help: "The initial network namespace (for exec events, which the kernel reports only there), when vpnd runs in another one.")
    var initialNetworkNamespace = "/proc/1/ns/net"

    @Option(name: .customLong("state-dir"), help: "Keep the last policy that applied in DIR/policy.d, for the killswitch at boot (vpnd-early.service).")
    var stateDirectory: String?

    @Option(name: .customLong("resolv-conf"), help: "Where trusted-network rules read the DNS search domains.")
    var resolvConf = "/etc/resolv.conf"

    @Flag(help: "Remove every socket program, nft table, rule and route of vpnexec (the killswitch included) and exit.")
    var cleanup = false

    @Flag(help: "Apply the policy and exit without serving requests; the kernel keeps the state (e.g. to put the killswitch in place early at boot).")
    var oneshot = false

    @Flag(name: .shortAndLong, help: "Log debug messages.")
    var verbose = false

    func run() throws {
        let log = Log(minimum: verbose ? .debug : .info, priorityPrefixes: Log.standardErrorIsJournal(), program: "vpnd")
        guard geteuid() == 0 else {
            log.error("must run as root (it keeps only CAP_NET_ADMIN once started)")
            throw ExitCode(1)
        }
        if cleanup {
            do {
                try teardownKernelState(socketPath: ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current))
                log.notice("removed vpnexec's socket programs, nft table, rules and routes")
                return
            } catch {
                log.error("cleanup failed: \(error)")
                throw ExitCode(1)
            }
        }
        var options = DaemonOptions(
            policyDirectory: policyDirectory,
            socketPath: ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current),
            cgroupParent: cgroupParent)
        options.initialNetworkNamespace = initialNetworkNamespace
        options.stateDirectory = stateDirectory
        options.oneshot = oneshot
        options.resolvConfPath = resolvConf
        do {
            let daemon = try Daemon(options: options, log: log)
            if !oneshot { try daemon.run() }
        } catch let error as PolicyError {
            log.error("invalid policy, nothing was changed:\n\(error)")
            throw ExitCode(1)
        } catch {
            log.error("\(error)")
            throw ExitCode(1)
        }
    }
}
