import Addresses

/// A wg-quick style file (`[Interface]` and `[Peer]` sections of `Key = Value` lines), the
/// format providers hand out and `wg-quick` reads. Parsing is pure; resolving an endpoint's
/// host name and applying addresses and routes happen at the edge.
public struct WgQuickConfig: Sendable {
    public struct Interface: Sendable {
        public var privateKey: PrivateKey
        public var listenPort: UInt16?
        public var fwmark: UInt32?
        /// Addresses of the tunnel interface, with their prefix lengths (`10.8.0.2/24`).
        public var addresses: [IPPrefix] = []
        /// DNS servers and search domains; a later issue's DNS proxy consumes them.
        public var dnsServers: [IPAddress] = []
        public var dnsSearch: [String] = []
        public var mtu: UInt32?
        /// Where routes to the peers' AllowedIPs go (wg-quick's `Table`).
        public var table: RouteTable = .auto
        /// wg-quick writes the running state back to the file on `down`; we never do.
        public var saveConfig = false
        /// The line of each key given in [Interface], by lower-case name: messages about
        /// keys that are read but not applied point at them.
        public var keyLines: [String: Int] = [:]
        public var line: Int
    }

    /// wg-quick's `Table =`: `auto` (absent) routes AllowedIPs in the main table, and
    /// 0.0.0.0/0 or ::/0 through a table of their own with fwmark rules; `off` adds no
    /// routes at all; a number puts every AllowedIPs route, defaults included, in that
    /// table and adds no rules.
    public enum RouteTable: Sendable, Hashable, CustomStringConvertible {
        case auto
        case off
        case number(UInt32)

        public var description: String {
            switch self {
            case .auto: "auto"
            case .off: "off"
            case let .number(n): "\(n)"
            }
        }
    }

    /// Where a peer is reached: a literal address or a host name to resolve, and a port.
    public struct EndpointSpec: Hashable, Sendable, CustomStringConvertible {
        public enum Host: Hashable, Sendable {
            case address(IPAddress)
            case name(String)
        }
        public var host: Host
        public var port: UInt16

        public init(host: Host, port: UInt16) {
            self.host = host
            self.port = port
        }

        /// `192.0.2.1:51820`, `[2001:db8::1]:51820` or `vpn.example.com:51820`.
        public init?(_ text: some StringProtocol) {
            let text = Substring(text)
            let hostPart: Substring
            let portPart: Substring
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]"),
                      text[text.index(after: close)...].hasPrefix(":") else { return nil }
                hostPart = text[text.index(after: text.startIndex)..<close]
                portPart = text[text.index(close, offsetBy: 2)...]
                guard let address = IPAddress(hostPart), !address.isIPv4 else { return nil }
                host = .address(address)
            } else {
                guard let colon = text.lastIndex(of: ":") else { return nil }
                hostPart = text[..<colon]
                portPart = text[text.index(after: colon)...]
                guard !hostPart.isEmpty, !hostPart.contains(":") else { return nil }
                if let address = IPAddress(hostPart) {
                    host = .address(address)
                } else {
                    guard hostPart.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else { return nil }
                    host = .name(String(hostPart))
                }
            }
            guard let port = UInt16(portPart), port != 0 else { return nil }
            self.port = port
        }

        public var description: String {
            switch host {
            case let .address(a): return a.isIPv4 ? "\(a):\(port)" : "[\(a)]:\(port)"
            case let .name(n): return "\(n):\(port)"
            }
        }
    }

    public struct Peer: Sendable {
        public var publicKey: PublicKey
        public var presharedKey: PresharedKey?
        /// The first of `endpoints`: where the peer is reached.
        public var endpoint: EndpointSpec?
        /// Every `Endpoint` given, in order: several (vpnexec only; wg-quick refuses a
        /// comma list and keeps the last of several lines) are servers of the same key to
        /// choose from (ServerList), allowed in a file with one [Peer].
        public var endpoints: [EndpointSpec] = []
        public var allowedIPs: [IPPrefix] = []
        /// Seconds between keepalives; nil when off.
        public var persistentKeepalive: UInt16?
        public var line: Int
    }

    public var file: String
    public var interface: Interface
    public var peers: [Peer]
}

/// A wg-quick file that cannot be used, with the place that says why. The message names
/// keys and shows values only where they cannot be secret: these files hold private keys,
/// and errors end up on terminals and in the journal.
public struct WgQuickConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    /// 1-based, in characters of the line; where the offending key or value starts.
    public var column: Int
    public var message: String

    public init(file: String, line: Int, column: Int = 1, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { "\(file):\(line):\(column): \(message)" }
}

/// Every problem of one wg-quick file, in the order of its lines (never none): one run
/// shows them all, as the policy's errors do.
public struct WgQuickConfigErrors: Error, Sendable, Equatable, CustomStringConvertible {
    public var errors: [WgQuickConfigError]

    public init(_ errors: [WgQuickConfigError]) {
        self.errors = errors
    }

    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
