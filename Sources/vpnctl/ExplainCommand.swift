import ArgumentParser
import Control
import Glibc
import StatusPresentation

extension VPNCtl {
    struct Explain: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What the kernel does with a process's traffic now, or with a new process's of a profile: tunnel or not, source address, DNS, killswitch.",
            discussion: """
            `vpnctl explain PID` reads the process's cgroup and says which rule put it there, the mark its sockets are \
            born with, the route and source address the kernel picks for it now (IPv4 and IPv6, a lookup with that mark \
            to 192.0.2.1 and 2001:db8::1), who answers its DNS and its nss-resolve lookups, the profile's exceptions, \
            the killswitch and its network namespace. A user may explain its own processes and the profiles it may use; \
            root any. `vpnctl explain -p NAME` says the same of a process launched with `vpnexec -p NAME`; with \
            --probe HOST:PORT vpnctl also starts one (itself, through vpnexec), which connects to HOST:PORT over TCP, \
            and prints the local address its socket got and whether it is the tunnel's.
            """)
        @OptionGroup var connection: Connection
        @Flag(help: "Print JSON (sorted keys, a schema version; see docs/reference.md).") var json = false
        @Option(name: [.short, .long], help: "Explain a new process of this profile instead of a running one.", completion: ProfileNames.completion)
        var profile: String?
        @Option(help: ArgumentHelp("With -p: connect to HOST:PORT (TCP) from inside the profile.", valueName: "HOST:PORT"))
        var probe: String?
        /// What the probe's child runs inside the profile: connect, print the local address.
        @Option(name: .customLong("probe-connect"), help: .hidden) var probeConnect: String?
        @Argument(help: "The process id.") var pid: Int32?

        func validate() throws {
            if probeConnect != nil { return }
            if (pid == nil) == (profile == nil) { throw ValidationError("give a process id or -p NAME") }
            if probe != nil, profile == nil { throw ValidationError("--probe needs -p NAME (it starts a process in the profile)") }
            if let probe, ExplainedProbe.target(probe) == nil { throw ValidationError("--probe wants ADDRESS:PORT ([ADDRESS]:PORT for IPv6), not \"\(probe)\"") }
        }

        func run() throws {
            if let probeConnect {
                print(ProbeConnect.run(probeConnect))
                return
            }
            guard var explanation = try connection.send(.explain(pid: pid, profile: profile)).explanation else { throw ExitCode(1) }
            // vpnd knows a namespace by the id its own gives it; one with none, and what it
            // is, vpnctl can say for the caller's own processes.
            if let pid, explanation.namespace?.state ?? ExplainedNamespace.unknown == ExplainedNamespace.unknown,
               explanation.namespace?.reason == nil, var namespace = Self.foreignNamespace(of: pid) {
                namespace.namespaceID = explanation.namespace?.namespaceID
                explanation.namespace = namespace
            }
            if let probe, let profile {
                explanation.probe = ProbeConnect.launch(probe, profile: profile, socket: connection.socketPath,
                                                        tunnelAddresses: explanation.tunnel?.addresses ?? [])
            }
            print(json ? String(decoding: ControlCoding.encode(explanation), as: UTF8.self) : ExplainText.render(explanation), terminator: "")
        }

        /// A network namespace other than vpnctl's, read here: the link is guarded like ptrace,
        /// which the caller has for its own processes and vpnd (in its Landlock domain) has
        /// for none outside it. Unreadable (another user's process, for root's vpnctl never):
        /// nothing said.
        static func foreignNamespace(of pid: Int32) -> ExplainedNamespace? {
            guard let theirs = link("/proc/\(pid)/ns/net"), let ours = link("/proc/self/ns/net"), theirs != ours else { return nil }
            var namespace = ExplainedNamespace(state: ExplainedNamespace.unknown)
            namespace.reason = "\(theirs), not vpnctl's \(ours)"
            return namespace
        }

        static func link(_ path: String) -> String? {
            var buffer = [CChar](repeating: 0, count: 256)
            let count = readlink(path, &buffer, buffer.count - 1)
            guard count > 0 else { return nil }
            return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}
