import Addresses
import Descriptors
import Glibc
import Monotonic

/// The cross-platform userspace API (wireguard.com/xplatform) that `wg show` and `wg set`
/// speak over /var/run/wireguard/IFACE.sock: `get=1` or `set=1`, then `key=value` lines,
/// an empty line ending the request; the answer ends with `errno=N` and an empty line.
public enum UAPI {
    /// A request as read from the socket.
    public enum Request: Sendable {
        case get
        case set(SetRequest)
        /// `get=stats`, our extension (the `wg` tool never sends it): drop counters by reason.
        case stats
    }

    /// What a `set=1` request asks, in the order it asked it.
    public struct SetRequest: Sendable {
        /// nil: leave alone; `.some(nil)`: remove the key (all-zero key in the request).
        public var privateKey: PrivateKey??
        public var listenPort: UInt16?
        /// 0 removes the mark.
        public var fwmark: UInt32?
        public var replacePeers = false
        public var peers: [PeerChange] = []
    }

    public struct PeerChange: Sendable {
        public var publicKey: PublicKey
        public var remove = false
        /// Only change an existing peer; never create one.
        public var updateOnly = false
        /// `.some(nil)` removes the key.
        public var presharedKey: PresharedKey??
        public var endpoint: (address: IPAddress, port: UInt16)?
        /// 0 turns keepalives off.
        public var persistentKeepalive: UInt16?
        public var replaceAllowedIPs = false
        /// `allowed_ip=PREFIX` adds, `allowed_ip=-PREFIX` removes, in the order asked.
        public var allowedIPChanges: [AllowedIPChange] = []

        /// The prefixes this request adds.
        public var allowedIPs: [IPPrefix] {
            allowedIPChanges.compactMap { if case let .add(prefix) = $0 { prefix } else { nil } }
        }

        public init(publicKey: PublicKey) { self.publicKey = publicKey }
    }

    /// The errno an answer carries, as wireguard-go's ipc package sends it: negated on the
    /// wire (`errno=-22`), so that `wg`, which negates it back, prints its meaning
    /// ("Invalid argument", "Address already in use") rather than "Unknown error -22".
    public struct ErrorCode: Sendable, Equatable, CustomStringConvertible {
        /// The positive errno value.
        public let value: Int32

        public init(_ value: Int32) { self.value = value }

        /// A key or value the engine does not accept.
        public static let invalid = ErrorCode(EINVAL)
        /// A line that is not `key=value`.
        public static let protocolViolation = ErrorCode(EPROTO)
        /// The listen port (or the mark on its socket) could not be taken.
        public static let portInUse = ErrorCode(EADDRINUSE)

        public var description: String { SystemError.reason(of: value) }
    }

    /// A request that cannot be applied, and why; the answer carries only the code, the
    /// reason goes to the engine's log. Messages never show a key.
    public struct ProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var code: ErrorCode
        public init(message: String, code: ErrorCode = .invalid) {
            self.message = message
            self.code = code
        }
        public var description: String { message }
    }

    /// Parses one request from its lines (without the terminating empty line).
    public static func parse(lines: [Substring]) throws(ProtocolError) -> Request {
        guard let first = lines.first else { throw ProtocolError(message: "empty request") }
        switch first {
        case "get=1":
            guard lines.count == 1 else { throw ProtocolError(message: "get=1 takes no arguments") }
            return .get
        case "set=1":
            return .set(try parseSet(lines.dropFirst()))
        case "get=stats":
            return .stats
        default:
            throw ProtocolError(message: "unknown operation \(Redaction.quoted(first)); expected get=1 or set=1", code: .protocolViolation)
        }
    }

    private static func parseSet(_ lines: ArraySlice<Substring>) throws(ProtocolError) -> SetRequest {
        var request = SetRequest()
        var peer: PeerChange?
        func flush() { if let p = peer { request.peers.append(p) }; peer = nil }
        for line in lines {
            guard let equals = line.firstIndex(of: "=") else {
                throw ProtocolError(message: "a line without '=' (not shown: it may hold a key)", code: .protocolViolation)
            }
            let key = line[..<equals]
            let value = line[line.index(after: equals)...]
            if key == "public_key" {
                flush()
                guard let k = PublicKey(hex: value) else { throw ProtocolError(message: "public_key is not 64 hex digits") }
                peer = PeerChange(publicKey: k)
                continue
            }
            if var p = peer {
                try applyPeerKey(key, value, to: &p)
                peer = p
                continue
            }
            switch key {
            case "private_key":
                guard let k = PrivateKey(hex: value) else { throw ProtocolError(message: "private_key is not 64 hex digits") }
                request.privateKey = .some(k.secret.isZero ? nil : k)
            case "listen_port":
                guard let port = UInt16(value) else { throw ProtocolError(message: "listen_port \(Redaction.quoted(value)) is not a port") }
                request.listenPort = port
            case "fwmark":
                guard let mark = UInt32(value) else { throw ProtocolError(message: "fwmark \(Redaction.quoted(value)) is not a 32-bit number") }
                request.fwmark = mark
            case "replace_peers":
                guard value == "true" else { throw ProtocolError(message: "replace_peers takes only true") }
                request.replacePeers = true
            default:
                throw ProtocolError(message: "unknown interface key \(keyName(key)); known: private_key, listen_port, fwmark, replace_peers, public_key")
            }
        }
        flush()
        return request
    }

    private static func applyPeerKey(_ key: Substring, _ value: Substring, to peer: inout PeerChange) throws(ProtocolError) {
        switch key {
        case "remove":
            guard value == "true" else { throw ProtocolError(message: "remove takes only true") }
            peer.remove = true
        case "update_only":
            guard value == "true" else { throw ProtocolError(message: "update_only takes only true") }
            peer.updateOnly = true
        case "preshared_key":
            guard let k = PresharedKey(hex: value) else { throw ProtocolError(message: "preshared_key is not 64 hex digits") }
            peer.presharedKey = .some(k.secret.isZero ? nil : k)
        case "endpoint":
            guard let spec = WgQuickConfig.EndpointSpec(value), case let .address(address) = spec.host else {
                throw ProtocolError(message: "endpoint \(Redaction.quoted(value)) is not address:port (IPv6 as [address]:port, without a zone)")
            }
            peer.endpoint = (address, spec.port)
        case "persistent_keepalive_interval":
            guard let seconds = UInt16(value) else { throw ProtocolError(message: "persistent_keepalive_interval \(Redaction.quoted(value)) is not 0-65535") }
            peer.persistentKeepalive = seconds
        case "replace_allowed_ips":
            guard value == "true" else { throw ProtocolError(message: "replace_allowed_ips takes only true") }
            peer.replaceAllowedIPs = true
        case "allowed_ip":
            // A leading '-' removes the prefix from the peer (wireguard-go, newer `wg`).
            let removes = value.hasPrefix("-")
            guard let prefix = IPPrefix(removes ? value.dropFirst() : value) else {
                throw ProtocolError(message: "allowed_ip \(Redaction.quoted(value)) is not address/length (or -address/length to remove it)")
            }
            peer.allowedIPChanges.append(removes ? .remove(prefix.network) : .add(prefix.network))
        case "protocol_version":
            guard value == "1" else { throw ProtocolError(message: "protocol_version \(Redaction.quoted(value)) is not supported; only 1") }
        default:
            throw ProtocolError(message: "unknown peer key \(keyName(key)); known: remove, update_only, preshared_key, endpoint, persistent_keepalive_interval, replace_allowed_ips, allowed_ip, protocol_version")
        }
    }

    /// A key's name as messages show it: only when it is a word (a request can put anything
    /// before its '=', a key included).
    private static func keyName(_ key: Substring) -> String {
        Redaction.isWord(key, extra: "_") ? "\"\(key)\"" : "(a name not shown: it is not a word)"
    }

    /// One peer as `get=1` reports it.
    public struct PeerReport: Sendable {
        public var publicKey: PublicKey
        public var presharedKey: PresharedKey?
        public var endpoint: (address: IPAddress, port: UInt16)?
        public var lastHandshake: (seconds: Int64, nanoseconds: Int64)?
        public var txBytes: UInt64
        public var rxBytes: UInt64
        public var persistentKeepalive: UInt16
        public var allowedIPs: [IPPrefix]

        public init(publicKey: PublicKey, presharedKey: PresharedKey?, endpoint: (address: IPAddress, port: UInt16)?,
                    lastHandshake: (seconds: Int64, nanoseconds: Int64)?, txBytes: UInt64, rxBytes: UInt64,
                    persistentKeepalive: UInt16, allowedIPs: [IPPrefix]) {
            self.publicKey = publicKey
            self.presharedKey = presharedKey
            self.endpoint = endpoint
            self.lastHandshake = lastHandshake
            self.txBytes = txBytes
            self.rxBytes = rxBytes
            self.persistentKeepalive = persistentKeepalive
            self.allowedIPs = allowedIPs
        }
    }

    /// The answer to `get=1`, keys in the order wireguard-go writes them.
    public static func renderGet(privateKey: PrivateKey?, listenPort: UInt16, fwmark: UInt32?, peers: [PeerReport]) -> String {
        var out = ""
        if let privateKey { out += "private_key=\(privateKey.hex)\n" }
        out += "listen_port=\(listenPort)\n"
        if let fwmark, fwmark != 0 { out += "fwmark=\(fwmark)\n" }
        for peer in peers {
            out += "public_key=\(peer.publicKey.hex)\n"
            out += "preshared_key=\(peer.presharedKey?.hex ?? String(repeating: "0", count: 64))\n"
            out += "protocol_version=1\n"
            if let (address, port) = peer.endpoint {
                out += address.isIPv4 ? "endpoint=\(address):\(port)\n" : "endpoint=[\(address)]:\(port)\n"
            }
            out += "last_handshake_time_sec=\(peer.lastHandshake?.seconds ?? 0)\n"
            out += "last_handshake_time_nsec=\(peer.lastHandshake?.nanoseconds ?? 0)\n"
            out += "tx_bytes=\(peer.txBytes)\n"
            out += "rx_bytes=\(peer.rxBytes)\n"
            out += "persistent_keepalive_interval=\(peer.persistentKeepalive)\n"
            for prefix in peer.allowedIPs { out += "allowed_ip=\(prefix)\n" }
        }
        return out + "errno=0\n\n"
    }

    /// `drop_<reason>=N` for every reason, then the device's own counters (`name=N`, in
    /// the order given), then `errno=0`.
    public static func renderStats(_ drops: [DropReason: UInt64], device: [(String, Int)] = []) -> String {
        DropReason.allCases.map { "drop_\($0.rawValue)=\(drops[$0] ?? 0)\n" }.joined()
            + device.map { "\($0.0)=\($0.1)\n" }.joined() + "errno=0\n\n"
    }

    public static func renderError(_ error: ProtocolError) -> String { "errno=-\(error.code.value)\n\n" }
    public static let renderSetOK = "errno=0\n\n"
}
