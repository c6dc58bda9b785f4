import ArgumentParser
import BuildVersion
import Control
import Glibc
import Plan
import Policy
import TrustedFiles
import TunnelFiles

@main
struct VPNCtl: ParsableCommand {
    /// `vpnctl --socket PATH status` as well as `vpnctl status --socket PATH`: the option
    /// belongs to the subcommands, so a leading one is moved behind the subcommand.
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var leading: [String] = []
        while let first = arguments.first, first == "--socket" || first.hasPrefix("--socket=") {
            leading.append(arguments.removeFirst())
            if first == "--socket", !arguments.isEmpty { leading.append(arguments.removeFirst()) }
        }
        if !leading.isEmpty, !arguments.isEmpty {
            arguments.insert(contentsOf: leading, at: 1)
        } else {
            arguments = leading + arguments
        }
        main(arguments)
    }

    static let configuration = CommandConfiguration(
        commandName: "vpnctl",
        abstract: "Status and control of vpnd.",
        version: "vpnctl \(String(cString: vpnexec_build_version()))",
        subcommands: [Status.self, Profiles.self, Members.self, Metrics.self, PlanCommand.self, Reload.self, Check.self, Move.self,
                      Desktop.self, Up.self, Down.self])

    /// A failure of vpnctl's own, said in one line: exits 1.
    static func fail(_ message: String) -> Never {
        writeStandardError("vpnctl: \(message)\n")
        exit(withError: ExitCode(1))
    }

    struct Connection: ParsableArguments {
        @Option(help: "Control socket path (default: $VPNEXEC_SOCKET or \(ControlSocket.defaultPath)).")
        var socket: String?

        var socketPath: String { ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current) }

        func send(_ request: ControlRequest) throws -> ControlResponse {
            do {
                let response = try ControlClient.send(request, socketPath: socketPath)
                guard response.ok else {
                    writeStandardError("vpnctl: \(response.message ?? "refused")\n")
                    throw ExitCode(1)
                }
                return response
            } catch let error as ControlClientError {
                writeStandardError("vpnctl: \(error)\n")
                throw ExitCode(1)
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Profiles, their tunnels, members and traffic.")
        @OptionGroup var connection: Connection
        @Flag(help: "Print JSON (sorted keys, a schema version; see the README).") var json = false

        func run() throws {
            guard let report = try connection.send(.status).status else { throw ExitCode(1) }
            print(json ? String(decoding: ControlCoding.encode(report), as: UTF8.self) : StatusText.render(report), terminator: "")
        }
    }

    struct PlanCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plan",
            abstract: "Print the nft ruleset, rules and routes the policy compiles to, without changing anything.",
            discussion: "Asks vpnd (which compiles the policy on disk with the machine's current facts), or, with --policy-dir, compiles locally.")
        @OptionGroup var connection: Connection
        @Option(name: .customLong("policy-dir"), help: "Compile this directory locally instead of asking vpnd.")
        var policyDirectory: String?
        @Option(name: .customLong("cgroup-parent"), help: "With --policy-dir: where profile cgroups live.")
        var cgroupParent = "vpn.slice"

        func run() throws {
            if let policyDirectory {
                do {
                    print(try LocalPlan.render(policyDirectory: policyDirectory, cgroupParent: cgroupParent), terminator: "")
                } catch {
                    writeStandardError("\(error)\n")
                    throw ExitCode(1)
                }
            } else {
                print(try connection.send(.plan).message ?? "", terminator: "")
            }
        }
    }

    struct Reload: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Re-read the policy (as SIGHUP does); an invalid policy changes nothing.")
        @OptionGroup var connection: Connection
        func run() throws { print(try connection.send(.reload).message ?? "reloaded") }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Validate policy files (together, as vpnd would read them), the wg-quick files of their built-in tunnels and the programs their executable lists name.")
        @Argument(help: "Policy files.") var files: [String]
        /// Accepted, not used (check reads files only): a script may give --socket to every subcommand.
        @OptionGroup var connection: Connection

        func run() throws {
            do {
                let policy = try Policy.parse(try PolicyDirectory.readFiles(files), resolver: SystemNameResolver())
                _ = try TunnelFiles.load(policy)
                let notes = try ExecutableCheck.run(policy)
                print("ok: \(policy.profiles.count) profile(s)" + policy.profiles.map { " \($0.name)" }.joined())
                for note in notes { print(note) }
                // Valid, but likely not what was meant: said, not refused.
                for warning in policy.bypassExecutablesWarnings { print(warning) }
            } catch {
                writeStandardError("\(error)\n")
                throw ExitCode(1)
            }
        }
    }

    struct Move: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move a running process (all its threads) into a profile, or with --out out of it.",
            discussion: """
            Only connections the process opens afterwards use the profile's tunnel; sockets it already has keep their \
            route. --out takes it back to where its login session would have it (its session scope; the root cgroup \
            where systemd does not manage cgroups); only root may take a process out of a profile.
            """)
        @OptionGroup var connection: Connection
        @Option(name: [.short, .long], help: "The profile.", completion: ProfileNames.completion) var profile: String?
        @Flag(help: "Take the process out of its profile instead.") var out = false
        @Argument(help: "The process id.") var pid: Int32

        func validate() throws {
            if out == (profile != nil) { throw ValidationError("give either --profile NAME or --out") }
        }

        func run() throws {
            let request: ControlRequest = profile.map { .move(profile: $0, pid: pid) } ?? .moveOut(pid: pid)
            print(try connection.send(request).message ?? "moved")
        }
    }

    struct Down: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "With a profile: hold its built-in tunnel down. Without: remove vpnexec's nft table (the killswitch), rules and routes, and stop vpnd.",
            discussion: """
            `vpnctl down PROFILE` takes the profile's built-in tunnel down and holds it down (its members' traffic is held by \
            the killswitch; no handshake even with traffic) until `vpnctl up PROFILE` or a reload; root, or a user the profile \
            allows. `vpnctl down` alone is root's: it lifts the killswitch of every profile and stops vpnd.
            """)
        @OptionGroup var connection: Connection
        @Argument(help: "The profile whose built-in tunnel to hold down.", completion: ProfileNames.completion) var profile: String?
        func run() throws {
            let request: ControlRequest = profile.map { .tunnelDown(profile: $0) } ?? .down
            print(try connection.send(request).message ?? "down")
        }
    }
}
