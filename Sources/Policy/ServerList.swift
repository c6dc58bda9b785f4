/// Several servers for one built-in tunnel: `tunnel.wireguard` lists wg-quick files (one per
/// server, as providers hand them out), or one file's [Peer] lists several `Endpoint`s (one
/// key, several addresses: TunnelFiles reads them), and `tunnel.servers` says how vpnd picks one:
/// `"failover"` (the default: in order, the next when one does not answer) or `"fastest"`
/// (the shortest handshake round trip, measured at connect and after a network change).
public struct ServerList: Hashable, Sendable {
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        case failover, fastest
    }

    /// Absolute paths, in the order written; the first is the tunnel's `config`.
    public var files: [String]
    public var mode: Mode
    /// Where `tunnel.wireguard` was written as a list; with one file, where `tunnel.servers`
    /// (or `tunnel.failover_after`) was (the file must then list several Endpoints).
    public var location: SourceLocation
    /// `tunnel.failover_after`: unanswered initiations before the next server is tried.
    public var failoverAfter: Int

    public static let defaultFailoverAfter = 3
    /// More would leave a dead server in use for minutes under a backoff schedule.
    public static let failoverAfterRange = 1...10

    public init(files: [String], mode: Mode, location: SourceLocation, failoverAfter: Int = defaultFailoverAfter) {
        self.files = files
        self.mode = mode
        self.location = location
        self.failoverAfter = failoverAfter
    }
}

extension ProfileDraft {
    /// `tunnel.wireguard` as an array (several servers) and `tunnel.servers`: the first file
    /// and where the list was written, so the caller reads it as the single file it names;
    /// nil when `wireguard` is a single string (or absent: with `servers` given for one file,
    /// `servers` is set all the same); `.some(nil)` for a bad list, reported here.
    static func readServers(_ reader: inout TableReader, into servers: inout ServerList?) -> (String, SourceLocation)?? {
        let context = reader.context
        let modeValue = reader.string("servers")
        let after = reader.integer("failover_after")
        let wireguard = reader.value("wireguard")
        var failoverAfter = ServerList.defaultFailoverAfter
        if let (number, at) = after {
            guard let count = Int(exactly: number), ServerList.failoverAfterRange.contains(count) else {
                reader.log.error("\(context).failover_after \(number) must be between \(ServerList.failoverAfterRange.lowerBound) and \(ServerList.failoverAfterRange.upperBound): unanswered handshake initiations before the next server", at: at)
                return .some(nil)
            }
            failoverAfter = count
        }
        var mode = ServerList.Mode.failover
        if let (text, modeAt) = modeValue {
            guard let known = ServerList.Mode(rawValue: text) else {
                reader.log.error("\(context).servers \"\(text)\" must be \"failover\" (in order) or \"fastest\" (shortest handshake round trip)", at: modeAt)
                return .some(nil)
            }
            mode = known
        }
        guard let value = wireguard, case .array = value.kind else {
            // One file: its [Peer] must list several Endpoints (TunnelFiles checks, at this place).
            if let asked = modeValue?.1 ?? after?.1 {
                guard let wireguard, case let .string(file) = wireguard.kind else {
                    reader.log.error("\(context).\(modeValue != nil ? "servers" : "failover_after") needs several servers: tunnel.wireguard = [\"/etc/vpnexec/a.conf\", \"/etc/vpnexec/b.conf\"], or one file whose [Peer] lists several Endpoints", at: asked)
                    return nil
                }
                servers = ServerList(files: [file], mode: mode, location: asked, failoverAfter: failoverAfter)
            }
            return nil
        }
        let listed = reader.strings("wireguard") ?? []
        let at = reader.location(value.position)
        guard !listed.isEmpty else {
            reader.log.error("\(context).wireguard is an empty list: name at least one wg-quick file", at: at)
            return .some(nil)
        }
        var seen: Set<String> = []
        for (file, fileAt) in listed {
            guard file.hasPrefix("/") else {
                reader.log.error("\(context).wireguard \"\(file)\" must be an absolute path to a wg-quick style file", at: fileAt)
                return .some(nil)
            }
            guard seen.insert(file).inserted else {
                reader.log.error("\(context).wireguard lists \"\(file)\" twice", at: fileAt)
                return .some(nil)
            }
        }
        servers = ServerList(files: listed.map(\.0), mode: mode, location: at, failoverAfter: failoverAfter)
        return .some((listed[0].0, at))
    }
}
