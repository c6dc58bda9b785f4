/// What the profiles' varlink servers ask of the part that owns them (the DNS service): a
/// profile's answer to a query, and whether a process is the profile's member.
public protocol ProfileNameAnswering: AnyObject {
    /// The profile's answer to a DNS query (nil: none, the call fails).
    func answer(_ query: [UInt8], overTCP: Bool, for profile: String, _ reply: @escaping ([UInt8]?) -> Void)
    /// Whether the process (by pid) is a member of the profile.
    func admits(pid: Int32, to profile: String) -> Bool
}

/// The profiles' varlink servers, one per profile at its path (`ResolveSocketPath`), made,
/// moved and closed as the policy changes; each call goes to whatever resolver the profile
/// has now (`answering`), so a rebuilt proxy does not close a member's connection.
public final class ProfileNameServers {
    private let loop: NameServerLoop
    /// Its owner, which outlives it.
    private unowned let answering: any ProfileNameAnswering
    private var servers: [String: NameServer] = [:]

    public init(loop: NameServerLoop, answering: any ProfileNameAnswering) {
        self.loop = loop
        self.answering = answering
    }

    /// Exactly the servers of `wanted` (profile -> path); returns those that could not
    /// listen, with why.
    public func configure(_ wanted: [String: String]) -> [String: String] {
        for (name, server) in servers where wanted[name] != server.path {
            server.close()
            servers[name] = nil
        }
        var failures: [String: String] = [:]
        for (name, path) in wanted.sorted(by: { $0.key < $1.key }) where servers[name] == nil {
            do {
                let server = try NameServer(path: path, loop: loop) { [unowned answering] query, overTCP, reply in
                    answering.answer(query, overTCP: overTCP, for: name, reply)
                }
                server.admit = { [unowned answering] pid in answering.admits(pid: pid, to: name) }
                servers[name] = server
            } catch {
                failures[name] = "\(error)"
            }
        }
        return failures
    }

    public func server(of profile: String) -> NameServer? { servers[profile] }

    public func closeAll() {
        for server in servers.values { server.close() }
        servers = [:]
    }
}
