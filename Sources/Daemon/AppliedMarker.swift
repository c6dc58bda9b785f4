import Glibc

/// `policy-applied` beside the control socket (/run/vpnexec): there while the kernel holds
/// a policy vpnd applied, this boot. systemd/vpn.slice asserts it, so that a unit in a
/// profile's slice starts only once the killswitch is in place; if vpnd failed, such a unit
/// fails to start instead of running in the clear. /run is emptied at boot, and `vpnctl
/// down` and `vpnd --cleanup` remove it with the rules.
struct AppliedMarker {
    let path: String

    init(socketPath: String) {
        let directory = socketPath.lastIndex(of: "/").map { String(socketPath[..<$0]) } ?? "."
        path = (directory.isEmpty ? "" : directory) + "/policy-applied"
    }

    /// Made with mknod, not opened: vpnd's sandbox lets it make files there, not write them.
    func set() {
        _ = mknod(path, S_IFREG | 0o644, 0)
    }

    func clear() { unlink(path) }
}
