import Addresses
import Policy

/// Whom a profile's DNS proxy asks, through the profile's tunnel: the profile's `dns`; else
/// its tunnel's own resolvers: a built-in tunnel's wg-quick `DNS =`, an interface's DNS
/// servers as the host holds them (LinkResolvers: what wg-quick, OpenVPN or NetworkManager
/// gave it). With none, members' queries are refused: said as an error with the fix (in
/// vpnd's log, `vpnctl status` and, where it can know, `vpnctl check`), never silently.
/// Pure: the daemon gives the files and facts it read.
public struct ProfileResolvers: Hashable, Sendable, CustomStringConvertible {
    public enum Source: Hashable, Sendable {
        /// The profile's `dns`.
        case policy
        /// The `DNS =` of its built-in tunnel's wg-quick file.
        case wireguardFile(String)
        /// The host's servers for its interface: where they were found (LinkResolvers,
        /// its servers those of the profile).
        case link(LinkResolvers)
        /// None: members' queries are refused.
        case none
    }

    public var servers: [IPAddress]
    public var source: Source
    /// With no servers: one line naming the profile and the fix.
    public var problem: String?

    public init(servers: [IPAddress], source: Source, problem: String? = nil) {
        self.servers = servers
        self.source = source
        self.problem = problem
    }

    /// `wireguardFile`: a built-in tunnel's wg-quick file (the first server's) and its
    /// `DNS =` addresses; `link`: the host's servers for the profile's interface. A built-in
    /// tunnel is vpnd's own interface: nobody else gives it servers, so only its file counts.
    public static func choose(_ profile: Profile, wireguardFile: (path: String, dns: [IPAddress])?, link: LinkResolvers?) -> ProfileResolvers {
        if !profile.dnsServers.isEmpty { return ProfileResolvers(servers: profile.dnsServers, source: .policy) }
        if profile.tunnel.isBuiltIn {
            if let file = wireguardFile, !file.dns.isEmpty { return ProfileResolvers(servers: file.dns, source: .wireguardFile(file.path)) }
        } else if let link, !link.servers.isEmpty {
            return ProfileResolvers(servers: link.servers, source: .link(link))
        }
        return ProfileResolvers(servers: [], source: .none, problem: missing(profile, wireguardFile: wireguardFile?.path))
    }

    /// Every profile's, by name.
    public static func all(_ policy: Policy, wireguardFiles: [String: (path: String, dns: [IPAddress])], links: [String: LinkResolvers]) -> [String: ProfileResolvers] {
        var chosen: [String: ProfileResolvers] = [:]
        for profile in policy.profiles {
            let interface = profile.tunnel.interfaceName
            chosen[profile.name] = choose(profile, wireguardFile: wireguardFiles[interface], link: links[interface])
        }
        return chosen
    }

    /// What `vpnctl check` says of the profiles without `dns`: an error for a built-in tunnel
    /// whose wg-quick file has no `DNS =` (known before anything runs), at its tunnel key; for
    /// an interface, a warning when the host holds no servers for it now (it may get some
    /// when it comes up), else a note of those it would ask.
    public static func check(_ policy: Policy, wireguardFiles: [String: (path: String, dns: [IPAddress])],
                             links: [String: LinkResolvers]) -> (errors: [PolicyDiagnostic], lines: [String]) {
        var errors: [PolicyDiagnostic] = []
        var lines: [String] = []
        for profile in policy.profiles where profile.dnsServers.isEmpty {
            let interface = profile.tunnel.interfaceName
            let chosen = choose(profile, wireguardFile: wireguardFiles[interface], link: links[interface])
            if profile.tunnel.isBuiltIn {
                if chosen.servers.isEmpty { errors.append(PolicyDiagnostic(chosen.problem ?? "", at: profile.tunnel.location ?? profile.location)) }
            } else if chosen.servers.isEmpty {
                lines.append("\(profile.location): warning: profile \"\(profile.name)\" has no dns: its members ask the DNS servers the host holds for \(interface) "
                             + "(systemd-resolved's or resolvconf's, where wg-quick's DNS = line and OpenVPN's pushed servers land), and it holds none now: "
                             + "until it does, their names do not resolve (their queries are refused); set dns = [...] in [profile.\(profile.name)] to be sure")
            } else {
                lines.append("profile \(profile.name): no dns, its members ask \(interface)'s DNS servers: now \(chosen)")
            }
        }
        return (errors, lines)
    }

    /// With no servers at all: the profile, what it means, and the fix, in one line.
    public static func missing(_ profile: Profile, wireguardFile: String?) -> String {
        let fix = "set dns = [...] in [profile.\(profile.name)] or give the tunnel's wg-quick file\(wireguardFile.map { " \($0)" } ?? "") a DNS = line"
        let start = "profile \(profile.name) has no DNS resolvers, so its members' names do not resolve (their queries are refused): \(fix)"
        guard !profile.tunnel.isBuiltIn else { return start }
        let interface = profile.tunnel.interfaceName
        return start + " (without dns, the profile asks the servers the host holds for \(interface), from systemd-resolved or resolvconf; it holds none)"
    }

    /// The word status gives for where the servers came from (`dns.serversFrom`).
    public var sourceName: String {
        switch source {
        case .policy: return "dns"
        case .wireguardFile: return "wg-quick"
        case let .link(found): return found.kind.rawValue
        case .none: return "none"
        }
    }

    /// The file they were read from, if any.
    public var file: String? {
        switch source {
        case let .wireguardFile(path): return path
        case let .link(found): return found.file
        case .policy, .none: return nil
        }
    }

    /// The interface index systemd-resolved was asked about over D-Bus, if it was.
    public var busLink: Int32? {
        if case let .link(found) = source { return found.link }
        return nil
    }

    /// For the log: "10.64.0.1, fd00::53 (resolvconf's, /run/resolvconf/interface/tun.wg0)",
    /// "10.64.0.1 (systemd-resolved over D-Bus, link 5)".
    public var description: String {
        let list = servers.map(\.description).joined(separator: ", ")
        switch source {
        case .policy: return list
        case let .wireguardFile(path): return "\(list) (the DNS = of \(path))"
        case let .link(found): return "\(list) (\(found.origin))"
        case .none: return problem ?? "none"
        }
    }
}
