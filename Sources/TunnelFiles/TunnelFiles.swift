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
        /// Every server's file, the first being `text` and `config` (`tunnel.wireguard` as a
        /// list: ServerList); vpnd runs one of them at a time.
        public var servers: [Server] = []
    }

    public struct Server: Sendable {
        public var path: String
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
            guard case let .wireguard(_, interface, location) = profile.tunnel else { continue }
            var servers: [Server] = []
            for path in profile.tunnel.serverFiles(profile) {
                if let server = load(path, profile: profile.name, at: location, problems: &problems) { servers.append(server) }
            }
            guard let first = servers.first, servers.count == profile.tunnel.serverFiles(profile).count else { continue }
            loaded[interface] = Loaded(profile: profile.name, interface: interface, text: first.text, config: first.config, servers: servers)
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
        return loaded
    }

    /// One server's file, read as trusted and parsed; its problems named at file:line.
    private static func load(_ path: String, profile: String, at location: SourceLocation, problems: inout [PolicyDiagnostic]) -> Server? {
        let text: String
        do {
            text = try TrustedFile.read(path, holdsSecret: true, limit: fileLimit)
        } catch {
            problems.append(PolicyDiagnostic("profile \(profile): cannot use its wg-quick file \(error)", at: location))
            return nil
        }
        do {
            let config = try WgQuickConfig.parse(text, file: path)
            if config.peers.isEmpty {
                problems.append(PolicyDiagnostic("profile \(profile): \(path) has no [Peer]: the tunnel would lead nowhere", at: location))
                return nil
            }
            return Server(path: path, text: text, config: config)
        } catch {
            problems.append(PolicyDiagnostic(error.message + " (the wg-quick file of profile \(profile))",
                                             at: SourceLocation(file: error.file, line: error.line, column: error.column)))
            return nil
        }
    }
}

extension Tunnel {
    /// A built-in tunnel's files: its servers' (ServerList) or its one file.
    func serverFiles(_ profile: Profile) -> [String] {
        guard case let .wireguard(path, _, _) = self else { return [] }
        return profile.servers?.files ?? [path]
    }
}
