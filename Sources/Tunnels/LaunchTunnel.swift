import Control
import Policy
import Routing
import WireGuardDevice
import Launch

/// What a launch into a profile finds of its tunnel, for vpnexec's warning: the tunnel when
/// the killswitch holds the profile's members because it is not there (they get "No route
/// to host" or time out, and nothing leaves), nil when the launch gets through it.
public enum LaunchTunnel {
    /// `link`: the tunnel's interface now; `phase`: a built-in tunnel's demand phase;
    /// `trusted`: the action a trusted network has the profile take (`block` holds members
    /// whatever the tunnel). Nothing is held without the killswitch or where a trusted
    /// network has members go direct; an on-demand tunnel that is down comes up for the
    /// launch (a built-in tunnel's interface stays in every phase: missing, it does not run).
    public static func held(_ profile: Profile, link: Link?, phase: TunnelDemand.Phase?, trusted: TrustedAction?) -> HeldTunnel? {
        let interface = profile.tunnel.interfaceName
        if trusted == .block { return HeldTunnel(interface: interface, state: HeldTunnel.blocked) }
        guard profile.killswitch, trusted != .disconnect else { return nil }
        guard let link else { return HeldTunnel(interface: interface, state: HeldTunnel.missing) }
        guard link.isUp, link.isRunning else { return HeldTunnel(interface: interface, state: HeldTunnel.down) }
        return phase == .heldDown ? HeldTunnel(interface: interface, state: HeldTunnel.heldDown) : nil
    }

    /// As above, with the link read only where something can hold members (a launch pays for
    /// the read: the one link by name, not a dump of every link); a link that cannot be read
    /// says nothing (no warning).
    public static func held(_ profile: Profile, phase: TunnelDemand.Phase?, trusted: TrustedAction?, readLink: () throws -> Link?) -> HeldTunnel? {
        guard profile.killswitch || trusted == .block else { return nil }
        let link: Link?
        do { link = try readLink() } catch { return nil }
        return held(profile, link: link, phase: phase, trusted: trusted)
    }
}
