import ArgumentParser
import Control

extension VPNCtl {
    struct Members: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The processes in a profile (or in every profile you may use): pid, user, profile, start, command.")
        @OptionGroup var connection: Connection
        @Option(name: [.short, .long], help: "Only this profile.", completion: ProfileNames.completion) var profile: String?

        func run() throws {
            let members = try connection.send(.members(profile: profile)).members ?? []
            print(Columns.render([["PID", "USER", "PROFILE", "SINCE", "COMMAND"]] + members.map {
                [String($0.pid), $0.user, $0.profile, Columns.localTime($0.since), $0.command]
            }), terminator: "")
        }
    }
}
