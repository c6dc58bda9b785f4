import Control
@testable import Tunnels
import Policy
import Routing
import Testing
import TrustedFiles
import WireGuardDevice
import Launch

/// What a launch finds of its profile's tunnel, for vpnexec's warning (issue 43, item 3):
/// held only where the killswitch holds members and the tunnel will not carry them.
@Suite struct LaunchTunnelTests {
    static func profile(_ extra: String = "") throws -> Profile {
        let text = "[profile.work]\ntunnel.interface = \"wg0\"\n" + extra
        return try #require(try Policy.parse([PolicySource(path: "/etc/vpnexec/policy.d/10-work.toml", text: text)], resolver: SystemNameResolver()).profiles.first)
    }

    static let up = Link(index: 7, name: "wg0", isUp: true, isRunning: true, mtu: 1420)

    @Test func missingDownAndHeldDownAreHeld() throws {
        let work = try Self.profile()
        #expect(LaunchTunnel.held(work, link: nil, phase: nil, trusted: nil) == HeldTunnel(interface: "wg0", state: "missing"))
        #expect(LaunchTunnel.held(work, link: Link(index: 7, name: "wg0", isUp: false, isRunning: false, mtu: 1420), phase: nil, trusted: nil)
            == HeldTunnel(interface: "wg0", state: "down"))
        #expect(LaunchTunnel.held(work, link: Link(index: 7, name: "wg0", isUp: true, isRunning: false, mtu: 1420), phase: nil, trusted: nil)
            == HeldTunnel(interface: "wg0", state: "down"), "up without carrier")
        #expect(LaunchTunnel.held(work, link: Self.up, phase: .heldDown, trusted: nil) == HeldTunnel(interface: "wg0", state: "held-down"))
        #expect(LaunchTunnel.held(work, link: Self.up, phase: nil, trusted: .block) == HeldTunnel(interface: "wg0", state: "blocked"))
        #expect(LaunchTunnel.held(try Self.profile("killswitch = false\n"), link: nil, phase: nil, trusted: .block) == HeldTunnel(interface: "wg0", state: "blocked"),
                "a block holds members without the killswitch too")
    }

    @Test func nothingIsHeldWhereTheLaunchGetsThroughOrGoesDirect() throws {
        let work = try Self.profile()
        #expect(LaunchTunnel.held(work, link: Self.up, phase: nil, trusted: nil) == nil)
        #expect(LaunchTunnel.held(work, link: Self.up, phase: .connecting, trusted: nil) == nil)
        #expect(LaunchTunnel.held(work, link: Self.up, phase: .downOnDemand, trusted: nil) == nil, "it comes up for the launch")
        #expect(LaunchTunnel.held(work, link: nil, phase: nil, trusted: .disconnect) == nil, "members go direct")
        #expect(LaunchTunnel.held(try Self.profile("killswitch = false\n"), link: nil, phase: nil, trusted: nil) == nil)
    }

    /// The link is read only where it can matter, and a read that fails warns of nothing.
    @Test func theLinkIsReadOnlyWhereSomethingCanHoldMembers() throws {
        struct Unreadable: Error {}
        var reads = 0
        let work = try Self.profile(), open = try Self.profile("killswitch = false\n")
        #expect(LaunchTunnel.held(open, phase: nil, trusted: nil) { reads += 1; return nil } == nil)
        #expect(reads == 0, "no killswitch, no block: nothing to read")
        #expect(LaunchTunnel.held(work, phase: nil, trusted: nil) { reads += 1; return nil } == HeldTunnel(interface: "wg0", state: "missing"))
        #expect(LaunchTunnel.held(open, phase: nil, trusted: .block) { reads += 1; return Self.up } == HeldTunnel(interface: "wg0", state: "blocked"))
        #expect(LaunchTunnel.held(work, phase: .heldDown, trusted: nil) { reads += 1; return Self.up } == HeldTunnel(interface: "wg0", state: "held-down"))
        #expect(reads == 3)
        #expect(LaunchTunnel.held(work, phase: nil, trusted: nil) { throw Unreadable() } == nil, "a link that cannot be read says nothing")
    }
}
