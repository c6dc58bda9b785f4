import ArgumentParser
import Control

extension VPNCtl {
    /// `vpnctl up PROFILE`: a built-in tunnel up now, and kept up (no idle teardown).
    struct Up: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Bring a profile's built-in tunnel up now and keep it up (no idle teardown) until `vpnctl down PROFILE` or a reload.",
            discussion: "Root, or a user the profile allows. Only for built-in tunnels (tunnel.wireguard): vpnd does not own a tunnel.interface.")
        @OptionGroup var connection: Connection
        @Argument(help: "The profile.", completion: ProfileNames.completion) var profile: String

        func run() throws { print(try connection.send(.tunnelUp(profile: profile)).message ?? "up") }
    }
}
