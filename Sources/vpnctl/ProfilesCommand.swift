import ArgumentParser
import Control

extension VPNCtl {
    struct Profiles: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The profiles you may use, with their tunnels' state.")
        @OptionGroup var connection: Connection
        @Flag(help: "Print only the names, one a line (for shell completion; nothing if vpnd does not answer).") var names = false

        func run() throws {
            if names {
                for name in ProfileNames.names(socket: connection.socket) { print(name) }
                return
            }
            let profiles = try connection.send(.profiles).profiles ?? []
            print(Columns.render([["PROFILE", "TUNNEL", "STATE", "KILLSWITCH", "MEMBERS"]] + profiles.map {
                [$0.name, $0.interface + ($0.builtIn ? " (built-in)" : ""), $0.state, $0.killswitch ? "on" : "off", String($0.members)]
            }), terminator: "")
        }
    }
}
