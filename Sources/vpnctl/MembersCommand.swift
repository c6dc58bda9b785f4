import ArgumentParser
import Control
import StatusPresentation

extension VPNCtl {
    struct Members: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The processes in a profile (or in every profile you may use): pid, user, profile, start, command; then its containers and forward.interfaces.")
        @OptionGroup var connection: Connection
        @Option(name: [.short, .long], help: "Only this profile.", completion: ProfileNames.completion) var profile: String?
        @Flag(help: "Print vpnd's answer as JSON (members, routedNamespaces, relayedNamespaces, heldNamespaces, forwardInterfaces; see docs/reference.md).")
        var json = false

        func run() throws {
            let answer = try connection.send(.members(profile: profile))
            if json {
                print(String(decoding: ControlCoding.encode(answer), as: UTF8.self), terminator: "")
                return
            }
            let members = answer.members ?? []
            print(Columns.render([["PID", "USER", "PROFILE", "SINCE", "COMMAND"]] + members.map {
                [String($0.pid), $0.user, $0.profile, Columns.localTime($0.since), $0.command]
            }), terminator: "")
            // The profiles in the answer's order: those named by its members, its containers
            // and its forward.interfaces, as they first come.
            var profiles: [String] = []
            for name in members.map(\.profile) + (answer.routedNamespaces ?? []).map(\.profile) + (answer.relayedNamespaces ?? []).map(\.profile)
                + (answer.heldNamespaces ?? []).compactMap(\.profile)
                + (answer.forwardInterfaces ?? [:]).keys.sorted() where !profiles.contains(name) {
                profiles.append(name)
            }
            let rows = ContainerRows.rows(profiles: profiles, routed: answer.routedNamespaces ?? [], relayed: answer.relayedNamespaces ?? [], held: answer.heldNamespaces ?? [],
                                          forward: answer.forwardInterfaces ?? [:])
            if !rows.isEmpty { print("\n" + Columns.render([ContainerRows.header] + rows), terminator: "") }
        }
    }
}
