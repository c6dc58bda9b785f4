import Glibc
import Policy
import TrustedFiles
import WireGuard

/// The wg-quick files a policy's built-in tunnels name, read and checked as part of the
/// policy: vpnd refuses a policy whose files are bad (nothing changes), and `vpnctl check`
/// reports the same errors, each at the file's own line.
public enum TunnelFiles {
    public struct Loaded: Sendable {
        public var profile: String
        public var interface: String
        public var text: String
        public var config: WgQuickConfig
    }

    /// A wg-quick file is a few hundred bytes; thousands of peers fit.
    public static let fileLimit = 1 << 20

    /// Every built-in tunnel's file by interface; throws a PolicyError naming each bad file:line.
    public static func load(_ policy: Policy) throws(PolicyError) -> [String: Loaded] {
        var loaded: [String: Loaded] = [:]
        var problems: [PolicyDiagnostic] = []
        for profile in policy.profiles {
            guard case let .wireguard(path, interface, location) = profile.tunnel else { continue }
            let text: String
            do {
                text = try TrustedFile.read(path, holdsSecret: true, limit: fileLimit)
            } catch {
                problems.append(PolicyDiagnostic("profile \(profile.name): cannot use its wg-quick file \(error)", at: location))
                continue
            }
            do {
                let config = try WgQuickConfig.parse(text, file: path)
                if config.peers.isEmpty {
                    problems.append(PolicyDiagnostic("profile \(profile.name): \(path) has no [Peer]: the tunnel would lead nowhere", at: location))
                    continue
                }
                loaded[interface] = Loaded(profile: profile.name, interface: interface, text: text, config: config)
            } catch {
                problems.append(PolicyDiagnostic(error.message + " (the wg-quick file of profile \(profile.name))",
                                                 at: SourceLocation(file: error.file, line: error.line, column: error.column)))
            }
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
        return loaded
    }
}
