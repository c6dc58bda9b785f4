/// Several servers for one built-in tunnel: `tunnel.wireguard` lists wg-quick files (one per
/// server, as providers hand them out), and `tunnel.servers` says how vpnd picks one:
/// `"failover"` (the default: in order, the next when one does not answer) or `"fastest"`
/// (the shortest handshake round trip, measured at connect and after a network change).
public struct ServerList: Hashable, Sendable {
    public enum Mode: String, Hashable, Sendable, CaseIterable {
        case failover, fastest
    }

    /// Absolute paths, in the order written; the first is the tunnel's `config`.
    public var files: [String]
    public var mode: Mode
    /// Where `tunnel.wireguard` was written.
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
    /// nil when `wireguard` is a single string (or absent); `.some(nil)` for a bad list,
    /// reported here.
    static func readServers(_ reader: inout TableReader, into servers: inout ServerList?) -> (String, SourceLocation)?? {
        let context = reader.context
        let modeValue = reader.string("servers")
        let after = reader.integer("failover_after")
        guard let value = reader.value("wireguard"), case .array = value.kind else {
            for (key, at) in [("servers", modeValue?.1), ("failover_after", after?.1)] {
                guard let at else { continue }
                reader.log.error("\(context).\(key) needs several servers: tunnel.wireguard = [\"/etc/vpnexec/a.conf\", \"/etc/vpnexec/b.conf\"]", at: at)
            }
            return nil
        }
        var failoverAfter = ServerList.defaultFailoverAfter
        if let (number, at) = after {
            guard let count = Int(exactly: number), ServerList.failoverAfterRange.contains(count) else {
                reader.log.error("\(context).failover_after \(number) must be between \(ServerList.failoverAfterRange.lowerBound) and \(ServerList.failoverAfterRange.upperBound): unanswered handshake initiations before the next server", at: at)
                return .some(nil)
            }
            failoverAfter = count
        }
        let listed = reader.strings("wireguard") ?? []
        let at = reader.location(value.position)
        var mode = ServerList.Mode.failover
        if let (text, modeAt) = modeValue {
            guard let known = ServerList.Mode(rawValue: text) else {
                reader.log.error("\(context).servers \"\(text)\" must be \"failover\" (in order) or \"fastest\" (shortest handshake round trip)", at: modeAt)
                return .some(nil)
            }
            mode = known
        }
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
