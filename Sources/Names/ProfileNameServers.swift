/// The profiles' varlink servers, one per profile at its path (`ResolveSocketPath`), made,
/// moved and closed as the policy changes; each call goes to whatever resolver the profile
/// has now (`resolve`), so a rebuilt proxy does not close a member's connection.
public final class ProfileNameServers {
    public typealias Resolve = (_ profile: String, _ query: [UInt8], _ overTCP: Bool, _ answer: @escaping ([UInt8]?) -> Void) -> Void

    private let loop: NameServerLoop
    private let resolve: Resolve
    /// Whether a process (by pid) is a member of the profile.
    public var admit: (_ profile: String, _ pid: Int32) -> Bool = { _, _ in false }
    private var servers: [String: NameServer] = [:]

    public init(loop: NameServerLoop, resolve: @escaping Resolve) {
        self.loop = loop
        self.resolve = resolve
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
                let server = try NameServer(path: path, loop: loop) { [unowned self] query, overTCP, answer in resolve(name, query, overTCP, answer) }
                server.admit = { [unowned self] pid in admit(name, pid) }
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
