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
        /// Every server, the first being `text` and `config`: one per file of
        /// `tunnel.wireguard` as a list (ServerList), and one per `Endpoint` of a file whose
        /// [Peer] lists several; vpnd runs one of them at a time. Empty: one server.
        public var servers: [Server] = []

        public init(profile: String, interface: String, text: String, config: WgQuickConfig, servers: [Server] = []) {
            self.profile = profile
            self.interface = interface
            self.text = text
            self.config = config
            self.servers = servers
        }
    }

    /// One server: a file, and for a file whose [Peer] lists several Endpoints, one of them
    /// (`config` then has that endpoint alone; `text` is the file's, the same for each).
    public struct Server: Sendable {
        public var path: String
        public var text: String
        public var config: WgQuickConfig
        /// Which of the file's Endpoints, when it lists several (0 for the first); nil when
        /// it lists one or none.
        public var endpointIndex: Int?

        /// How status and the log name it: the file, and the endpoint when it has several.
        public var name: String {
            guard endpointIndex != nil, let endpoint = config.peers.first?.endpoint else { return path }
            return "\(path) (Endpoint \(endpoint))"
        }

        /// Each of the file's Endpoints as a server, when its one [Peer] lists several.
        public static func each(path: String, text: String, config: WgQuickConfig) -> [Server] {
            guard config.peers.count == 1, config.peers[0].endpoints.count > 1 else { return [Server(path: path, text: text, config: config)] }
            return config.peers[0].endpoints.enumerated().map { index, endpoint in
                var one = config
                one.peers[0].endpoint = endpoint
                one.peers[0].endpoints = [endpoint]
                return Server(path: path, text: text, config: one, endpointIndex: index)
            }
        }
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
            var files = 0
            for path in profile.tunnel.serverFiles(profile) {
                if let server = load(path, profile: profile.name, at: location, problems: &problems) {
                    servers += Server.each(path: server.path, text: server.text, config: server.config)
                    files += 1
                }
            }
            guard let first = servers.first, files == profile.tunnel.serverFiles(profile).count else { continue }
            // `servers` with one file (its location is then the key's, not the file's): the
            // file must give the several servers.
            if let list = profile.servers, list.location != location, servers.count < 2 {
                problems.append(PolicyDiagnostic("profile \(profile.name): tunnel.servers and tunnel.failover_after need several servers: \(first.path) has one [Peer] Endpoint; list several Endpoint lines in its [Peer] or several files in tunnel.wireguard", at: list.location))
                continue
            }
            loaded[interface] = Loaded(profile: profile.name, interface: interface, text: first.text, config: first.config, servers: servers)
        }
        guard problems.isEmpty else { throw PolicyError(problems) }
        return loaded
    }

    /// One server's file, read as trusted and parsed; its problems named at file:line, all
    /// of them. One it cannot read names the file, and where on its path it failed when that
    /// is a directory ("/etc/wg: No such file or directory" alone named no file).
    private static func load(_ path: String, profile: String, at location: SourceLocation, problems: inout [PolicyDiagnostic]) -> Server? {
        let text: String
        do {
            text = try TrustedFile.read(path, holdsSecret: true, limit: fileLimit)
        } catch {
            problems.append(PolicyDiagnostic("profile \(profile): cannot use its wg-quick file \(path): \(error.said(of: path))", at: location))
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
            problems += error.errors.map {
                PolicyDiagnostic($0.message + " (the wg-quick file of profile \(profile))", at: SourceLocation(file: $0.file, line: $0.line, column: $0.column))
            }
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
