import CCap
import CLinux
import Descriptors
import Glibc

/// vpnd runs as root but keeps only what it needs. Effective: CAP_NET_ADMIN (netlink:
/// nftables, rules, routes, links; SO_MARK; the net sysctls). Permitted but raised only
/// while making a directory in the cgroup2 root: CAP_DAC_OVERRIDE, because that root is
/// read-only even for its owner on some hosts (mode 0555); where it is kept, it is also
/// raised to read systemd-resolved's link records (a directory of its user's, mode 0700). Everything else, cgroup.procs
/// writes included, works as uid 0 owning the files. All other capabilities leave every
/// set, the bounding set included, and no_new_privs forbids regaining any through exec.
/// CAP_BPF is used before the drop only: the socket mark program (SocketMarkProgram) is
/// loaded once at start; attaching it to cgroups and changing their marks later needs
/// no capability, only the program's and its storage's descriptors, so it is not kept.
public enum Privileges {
    public static let effective: [cap_value_t] = [CAP_NET_ADMIN]
    public static let permitted: [cap_value_t] = [CAP_NET_ADMIN, CAP_DAC_OVERRIDE]
    /// What a standalone WireGuard engine (vpn-server) keeps once its interface, socket,
    /// routes and nft table exist: CAP_NET_ADMIN to mark a moved socket (SO_MARK) and to
    /// remove its rules and table; CAP_NET_BIND_SERVICE because `wg set IFACE listen-port`
    /// (and wg-quick's `ListenPort`, which arrives only after start) may ask for a port
    /// below 1024.
    public static let tunnelEngine: [cap_value_t] = [CAP_NET_ADMIN, CAP_NET_BIND_SERVICE]

    /// Keeps `permitted` (vpnd's set unless a caller names its own: vpn-server, or vpnd
    /// without CAP_DAC_OVERRIDE where root can make the profile parent as its owner),
    /// raises `effective` of it, drops everything else from every set, the bounding set
    /// included, and sets no_new_privs.
    public static func dropToMinimum(effective: [cap_value_t] = effective, permitted: [cap_value_t] = permitted) throws(SystemError) {
        // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
        // Without CAP_SETPCAP (a service manager bounded us already, e.g. systemd's
        // CapabilityBoundingSet=) the bound stays as it was set: with no_new_privs no exec
        // can take more than the permitted set below, whatever the bound.
        if hasEffective(CAP_SETPCAP) {
            for capability in 0..<cap_value_t(cap_max_bits()) where !permitted.contains(capability) {
                if cap_get_bound(capability) == 1, cap_drop_bound(capability) != 0 {
                    throw SystemError("dropping capability \(capability) from the bounding set (cap_drop_bound)")
                }
            }
        }
        guard let caps = cap_init() else { throw SystemError("cap_init") }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var effectiveList = effective, permittedList = permitted
        guard cap_set_flag(caps, CAP_EFFECTIVE, Int32(effectiveList.count), &effectiveList, CAP_SET) == 0,
              cap_set_flag(caps, CAP_PERMITTED, Int32(permittedList.count), &permittedList, CAP_SET) == 0,
              cap_set_proc(caps) == 0 else {
            throw SystemError("restricting the capabilities (cap_set_proc)")
        }
        guard vx_set_no_new_privs() == 0 else {
            throw SystemError("setting no_new_privs (prctl)")
        }
    }

    public static func hasEffective(_ capability: cap_value_t) -> Bool {
        guard let caps = cap_get_proc() else { return false }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var value = cap_flag_value_t(0)
        return cap_get_flag(caps, capability, CAP_EFFECTIVE, &value) == 0 && value == CAP_SET
    }

    /// Whether making the profile parent (or an ancestor of it) again may need
    /// CAP_DAC_OVERRIDE: some directory it would be made in is not root's or not writable
    /// by its owner (the cgroup2 root is mode 0555 on some hosts).
    public static func directoryOverrideNeeded(_ directories: [String]) -> Bool {
        directories.contains { path in
            var info = stat()
            return stat(path, &info) != 0 || info.st_uid != 0 || info.st_mode & S_IWUSR == 0
        }
    }

    /// Runs `body` with CAP_DAC_OVERRIDE raised if it is permitted (it is not raised, and
    /// not needed, when vpnd runs with every capability, e.g. under a debugger).
    public static func withDirectoryOverride<T>(_ body: () throws -> T) throws -> T {
        guard let caps = cap_get_proc() else { return try body() }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        var value = cap_flag_value_t(0)
        guard cap_get_flag(caps, CAP_DAC_OVERRIDE, CAP_EFFECTIVE, &value) == 0, value == CAP_CLEAR else { return try body() }
        var list: [cap_value_t] = [CAP_DAC_OVERRIDE]
        guard cap_set_flag(caps, CAP_EFFECTIVE, 1, &list, CAP_SET) == 0, cap_set_proc(caps) == 0 else { return try body() }
        defer {
            _ = cap_set_flag(caps, CAP_EFFECTIVE, 1, &list, CAP_CLEAR)
            _ = cap_set_proc(caps)
        }
        return try body()
    }

    /// The process's capability sets in cap_to_text form ("cap_net_admin=ep").
    public static func current() -> String {
        guard let caps = cap_get_proc() else { return "?" }
        defer { cap_free(UnsafeMutableRawPointer(caps)) }
        guard let text = cap_to_text(caps, nil) else { return "?" }
        defer { cap_free(text) }
        return String(cString: text)
    }
}
