import Glibc
import WireGuard

/// What vpn-server says about a wg-quick file before it runs it: keys it reads but does
/// not act on, each in one warning line rather than silently dropped, and a file that
/// others may read (it holds the private key), in wg-quick's own words.
enum FileWarnings {
    static func notApplied(_ file: WgQuickConfig) -> [String] {
        let interface = file.interface
        func place(_ key: String) -> String { "\(file.file):\(interface.keyLines[key] ?? interface.line)" }
        var warnings: [String] = []
        let dns = interface.dnsServers.map(\.description) + interface.dnsSearch
        if !dns.isEmpty {
            warnings.append("\(place("dns")): DNS = \(dns.joined(separator: ", ")) is not applied: vpn-server leaves the resolver alone (wg-quick would hand these to resolvconf); configure it yourself")
        }
        if interface.saveConfig {
            warnings.append("\(place("saveconfig")): SaveConfig = true is not applied: vpn-server never writes the file back")
        }
        return warnings
    }

    /// wg-quick's warning for a file whose mode lets group or others in (wg-quick itself
    /// looks only at others, and only when the directory lets them in too; a key file
    /// readable by a group is as much a leak).
    static func access(path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        var resolved = path
        if let real = realpath(path, nil) {
            resolved = String(cString: real)
            free(real)
        }
        return "Warning: `\(resolved)' is world accessible"
    }
}
