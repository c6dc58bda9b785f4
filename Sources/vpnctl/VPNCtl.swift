import ArgumentParser
import BuildVersion
import Control
import Glibc
import Plan
import Policy
import StatusPresentation
import Suggestions
import TrustedFiles
import TunnelFiles
import Launch

@main
struct VPNCtl: ParsableCommand {
    /// `vpnctl --socket PATH status` as well as `vpnctl status --socket PATH`: the option
    /// belongs to the subcommands, so a leading one is moved behind the subcommand.
    static func main() {
        var arguments = separatingAttachedValues(Array(CommandLine.arguments.dropFirst()))
        var leading: [String] = []
        while let first = arguments.first, first == "--socket" || first.hasPrefix("--socket=") {
            leading.append(arguments.removeFirst())
            if first == "--socket", !arguments.isEmpty { leading.append(arguments.removeFirst()) }
        }
        // The command word (`help`'s too) is known, or the nearest is suggested.
        let asked = arguments.first == "help" ? arguments.dropFirst().first : arguments.first
        if let word = asked, !word.hasPrefix("-"), !commandNames.contains(word) {
            usageError(unknownCommand(word))
        }
        if !leading.isEmpty, !arguments.isEmpty {
            arguments.insert(contentsOf: leading, at: 1)
        } else {
            arguments = leading + arguments
        }
        main(arguments)
    }

    /// `-pwork` as getopt reads it, `-p work`: the argument parser takes a short option's
    /// value only as the next word, and refused it ("Unknown option '-pwork'"). `-p` is
    /// vpnctl's one short option with a value, and a profile name never starts with "-". The
    /// value of an option that takes one stays as it is, whatever it looks like, as does
    /// every word after `--`.
    static func separatingAttachedValues(_ arguments: [String]) -> [String] {
        let valued: Set = ["-p", "--profile", "--socket", "--output", "--policy-dir", "--cgroup-parent", "--probe", "--probe-connect"]
        var separated: [String] = []
        var words = arguments[...]
        while let word = words.popFirst() {
            if word == "--" {
                separated += [word] + words
                break
            }
            if word.hasPrefix("-p"), !word.hasPrefix("--"), word.count > 2 {
                separated += ["-p", String(word.dropFirst(2))]
                continue
            }
            separated.append(word)
            if valued.contains(word), let value = words.popFirst() { separated.append(value) }
        }
        return separated
    }

    /// The argument parser's own errors (an unknown option, a missing value) begin as
    /// vpnctl's do: "vpnctl: ...", not "Error: ...".
    static var _errorPrefix: String { "vpnctl: " }

    static var commandNames: [String] { configuration.subcommands.map { $0._commandName } + ["help"] }

    /// `vpnctl stauts`: the command meant, if one is within two edits, else the list.
    static func unknownCommand(_ word: String) -> String {
        let names = configuration.subcommands.map { $0._commandName }
        if let near = Suggestion.closest(to: word, among: names) {
            return "unknown command \"\(word)\"; did you mean \"\(near)\"?"
        }
        return "unknown command \"\(word)\" (commands: \(names.joined(separator: ", ")); see vpnctl --help)"
    }

    static let configuration = CommandConfiguration(
        commandName: "vpnctl",
        abstract: "Status and control of vpnd.",
        version: "vpnctl \(String(cString: vpnexec_build_version()))",
        subcommands: [Status.self, Profiles.self, Members.self, Metrics.self, PlanCommand.self, Reload.self, Check.self, Move.self,
                      Desktop.self, Explain.self, Up.self, Down.self, Teardown.self],
        // `vpnctl` alone shows the profiles' state, as `wg` and `nmcli` do; --help the commands.
        defaultSubcommand: Status.self)

    /// A failure of vpnctl's own, said in one line: exits 1.
    static func fail(_ message: String) -> Never {
        writeStandardError("vpnctl: \(message)\n")
        exit(withError: ExitCode(1))
    }

    /// A command line vpnctl will not act on, said in one line: exits 64 (EX_USAGE, as the
    /// argument parser's own usage errors).
    static func usageError(_ message: String) -> Never {
        writeStandardError("vpnctl: \(message)\n")
        exit(withError: ExitCode(64))
    }

    /// What the policy compiler found (check, plan --policy-dir): a problem at a place in a
    /// file as compilers say it ("FILE:LINE:COL: error: ..."), one without as vpnctl's own
    /// ("vpnctl: ..."); any other error in one line. Exits 1.
    static func failReading(_ error: any Error) -> Never {
        if let error = error as? PolicyError {
            writeStandardError(error.diagnostics.map { diagnostic in
                diagnostic.location == nil ? "vpnctl: \(diagnostic.message)\n" : "\(diagnostic)\n"
            }.joined())
        } else {
            writeStandardError("vpnctl: " + "\(error)".split(separator: "\n").joined(separator: "; ") + "\n")
        }
        exit(withError: ExitCode(1))
    }

    struct Connection: ParsableArguments {
        @Option(help: "Control socket path (default: $VPNEXEC_SOCKET or \(ControlSocket.defaultPath)).")
        var socket: String?

        var socketPath: String { ControlSocket.path(option: socket, environment: ProcessInfoEnvironment.current) }

        /// vpnd's answer, or its refusal (or why it cannot be asked) said in one line, and
        /// exit 1. `otherwise` is what the command can do without vpnd, said when it does
        /// not run.
        func send(_ request: ControlRequest, otherwise: String? = nil) throws -> ControlResponse {
            do {
                let response = try ControlClient.send(request, socketPath: socketPath)
                guard response.ok else {
                    writeStandardError("vpnctl: \(response.message ?? "refused")\n")
                    throw ExitCode(1)
                }
                return response
            } catch let error as ControlClientError {
                writeStandardError("vpnctl: \(error)" + (error.daemonNotRunning ? otherwise.map { "; \($0)" } ?? "" : "") + "\n")
                throw ExitCode(1)
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Profiles, their tunnels, members, traffic and what the killswitch held (the default command).",
            discussion: "What is held comes first (HELD: lines). --verbose adds how vpnexec does its work: vpnd's sandbox, the cgroups whose sockets are born marked, DNS steering, marks and tables, the learned sets, the tunnels' transports and engines' drops, what vpnd put back.")
        @OptionGroup var connection: Connection
        @Flag(help: "Print JSON (sorted keys, a schema version; see the README).") var json = false
        @Flag(name: [.short, .long], help: "Also say how vpnexec does its work (internals).") var verbose = false

        func run() throws {
            guard let report = try connection.send(.status).status else { throw ExitCode(1) }
            print(json ? String(decoding: ControlCoding.encode(report), as: UTF8.self) : StatusText.render(report, verbose: verbose), terminator: "")
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
                    VPNCtl.failReading(error)
                }
            } else {
                let local = "without vpnd, `vpnctl plan --policy-dir \(PolicyDirectory.defaultPath)` compiles the policy here"
                print(try connection.send(.plan, otherwise: local).message ?? "", terminator: "")
            }
        }
    }

    struct Reload: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Re-read the policy (as SIGHUP does); an invalid policy changes nothing.")
        @OptionGroup var connection: Connection
        func run() throws { print(try connection.send(.reload).message ?? "reloaded") }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate the policy as vpnd would read it, the wg-quick files of its built-in tunnels and the programs its executable lists name.",
            discussion: """
            Without a path, the policy directory vpnd reads by default (\(PolicyDirectory.defaultPath)); a directory is read as vpnd \
            reads one (its *.toml files, not hidden ones, in name order, together); files are read together in name order, and \
            one vpnd would never read as policy is refused. Every error is said, each at its file:line.
            """)
        @Argument(help: "A policy directory, or policy files (default: \(PolicyDirectory.defaultPath)).", completion: .file())
        var paths: [String] = []
        /// Accepted, not used (check reads files only): a script may give --socket to every subcommand.
        @OptionGroup var connection: Connection

        func run() throws {
            let input: PolicyCheckInput
            do {
                input = try PolicyCheckInput.from(paths)
            } catch {
                VPNCtl.usageError(error.description)
            }
            do {
                let policy = try Policy.parse(try input.read(), resolver: SystemNameResolver())
                let tunnelFiles = try TunnelFiles.load(policy)
                let resolvers = ResolversCheck.run(policy, tunnelFiles: tunnelFiles)
                guard resolvers.errors.isEmpty else { throw PolicyError(resolvers.errors) }
                let notes = try ExecutableCheck.run(policy)
                print("ok: \(Plural.count(policy.profiles.count, "profile"))" + policy.profiles.map { " \($0.name)" }.joined())
                for note in notes { print(note) }
                for line in resolvers.lines { print(line) }
                // Valid, but likely not what was meant: said, not refused.
                for warning in policy.bypassExecutablesWarnings { print(warning) }
                for warning in NamesCheck.run() { print(warning) }
            } catch {
                VPNCtl.failReading(error)
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

    /// `vpnctl down PROFILE` only: the word alone once lifted every killswitch (issue 43),
    /// one word away from holding one tunnel down. That is `teardown` now.
    struct Down: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hold a profile's built-in tunnel down (members held by the killswitch) until `vpnctl up PROFILE` or a reload.",
            discussion: """
            `vpnctl down PROFILE` takes the profile's built-in tunnel down and holds it down (its members' traffic is held by \
            the killswitch; no handshake even with traffic) until `vpnctl up PROFILE` or a reload; root, or a user the profile \
            allows. To remove every killswitch and stop vpnd: `vpnctl teardown --remove-killswitch`.
            """)
        @OptionGroup var connection: Connection
        @Argument(help: "The profile whose built-in tunnel to hold down.", completion: ProfileNames.completion) var profile: String?

        static let withoutProfile = "down needs a profile: `vpnctl down NAME` holds that profile's built-in tunnel down; "
            + "`vpnctl teardown --remove-killswitch` removes every killswitch and stops vpnd"

        func run() throws {
            guard let profile else { VPNCtl.usageError(Self.withoutProfile) }
            print(try connection.send(.tunnelDown(profile: profile)).message ?? "down")
        }
    }

    /// Everything of vpnexec's out of the kernel, and vpnd stopped: a command of its own,
    /// done only with a flag that names what is lost.
    struct Teardown: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove vpnexec's nft table (every profile's killswitch), rules, routes and socket programs, and stop vpnd; only with --remove-killswitch.",
            discussion: """
            Members' traffic then leaves by the normal routes, in the clear, until vpnd starts again. Root only. \
            Without --remove-killswitch nothing is done. `vpnd --cleanup` does the same when no vpnd runs.
            """)
        @OptionGroup var connection: Connection
        @Flag(name: .customLong("remove-killswitch"), help: "Do it: every profile's killswitch goes, members' traffic may leave in the clear.")
        var removeKillswitch = false

        static let refusal = "teardown removes every profile's killswitch, rules and routes and stops vpnd, so members' traffic "
            + "leaves in the clear; nothing done: give --remove-killswitch to do it (`vpnctl down NAME` holds one built-in tunnel down)"

        func run() throws {
            guard removeKillswitch else { VPNCtl.usageError(Self.refusal) }
            print(try connection.send(.down).message ?? "down")
        }
    }
}
