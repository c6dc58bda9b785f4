import Addresses
import DNS
import DomainNames
import JSON

/// A call of systemd-resolved's varlink interface `io.systemd.Resolve` as nss-resolve (and
/// other clients of /run/systemd/resolve/io.systemd.Resolve) makes it, read from one
/// message: `{"method": "io.systemd.Resolve.ResolveHostname", "parameters": {"name": ...,
/// "family": 0|2|10, "flags": N, "ifindex": N}}` or `ResolveAddress` with `"family"` and
/// `"address"` (the address's bytes as an array of numbers). Anything else is an error
/// reply as resolved gives it (`VarlinkError`), never a guess.
public enum ResolveCall: Hashable, Sendable {
    case hostname(HostnameQuery)
    case address(AddressQuery)

    public struct HostnameQuery: Hashable, Sendable {
        public var name: String
        /// AF_UNSPEC (both), AF_INET or AF_INET6.
        public var family: AddressFamily
        public var flags: UInt64
        public var ifindex: Int32

        public init(name: String, family: AddressFamily = .unspecified, flags: UInt64 = 0, ifindex: Int32 = 0) {
            self.name = name
            self.family = family
            self.flags = flags
            self.ifindex = ifindex
        }
    }

    public struct AddressQuery: Hashable, Sendable {
        public var address: IPAddress
        public var flags: UInt64
        public var ifindex: Int32

        public init(address: IPAddress, flags: UInt64 = 0, ifindex: Int32 = 0) {
            self.address = address
            self.flags = flags
            self.ifindex = ifindex
        }
    }

    public enum AddressFamily: Int64, Hashable, Sendable {
        case unspecified = 0
        case ipv4 = 2
        case ipv6 = 10
    }

    public static let interface = "io.systemd.Resolve"

    /// A call read from one message, or the error to answer it with. `oneway` is true when
    /// the client asked for no reply (then none is sent, as resolved refuses such calls).
    public static func read(_ message: [UInt8]) -> Result<ResolveCall, VarlinkError> {
        guard let json = try? JSONValue(parsing: message), case .object = json else { return .failure(.protocolViolation) }
        guard case let .string(method)? = json["method"] else { return .failure(.protocolViolation) }
        if case .bool(true)? = json["oneway"] { return .failure(.invalidParameter("oneway")) }
        if case .bool(true)? = json["more"] { return .failure(.invalidParameter("more")) }
        let parameters = json["parameters"] ?? .object([])
        guard case let .object(members) = parameters else { return .failure(.invalidParameter("parameters")) }
        switch method {
        case interface + ".ResolveHostname": return hostname(members, parameters)
        case interface + ".ResolveAddress": return address(members, parameters)
        default: return .failure(.methodNotFound(method))
        }
    }

    private static func hostname(_ members: [(key: String, value: JSONValue)], _ parameters: JSONValue) -> Result<ResolveCall, VarlinkError> {
        for member in members where !["name", "family", "flags", "ifindex"].contains(member.key) {
            return .failure(.invalidParameter(member.key))
        }
        guard case let .string(name)? = parameters["name"], !name.isEmpty, name.utf8.count <= 253 + 1,
              DomainName(name) != nil, !name.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) else {
            return .failure(.invalidParameter("name"))
        }
        guard let family = family(parameters["family"]) else { return .failure(.invalidParameter("family")) }
        guard let flags = flags(parameters["flags"]) else { return .failure(.invalidParameter("flags")) }
        guard let ifindex = ifindex(parameters["ifindex"]) else { return .failure(.invalidParameter("ifindex")) }
        return .success(.hostname(HostnameQuery(name: name, family: family, flags: flags, ifindex: ifindex)))
    }

    private static func address(_ members: [(key: String, value: JSONValue)], _ parameters: JSONValue) -> Result<ResolveCall, VarlinkError> {
        for member in members where !["address", "family", "flags", "ifindex"].contains(member.key) {
            return .failure(.invalidParameter(member.key))
        }
        guard let family = family(parameters["family"]), family != .unspecified else { return .failure(.invalidParameter("family")) }
        guard case let .array(values)? = parameters["address"], values.count == (family == .ipv4 ? 4 : 16) else {
            return .failure(.invalidParameter("address"))
        }
        var bytes: [UInt8] = []
        for value in values {
            guard case let .integer(byte) = value, (0...255).contains(byte) else { return .failure(.invalidParameter("address")) }
            bytes.append(UInt8(byte))
        }
        guard let flags = flags(parameters["flags"]) else { return .failure(.invalidParameter("flags")) }
        guard let ifindex = ifindex(parameters["ifindex"]) else { return .failure(.invalidParameter("ifindex")) }
        guard let address = IPAddress(bytes: bytes) else { return .failure(.invalidParameter("address")) }
        return .success(.address(AddressQuery(address: address, flags: flags, ifindex: ifindex)))
    }

    /// Absent or null: AF_UNSPEC, as resolved reads it.
    private static func family(_ value: JSONValue?) -> AddressFamily? {
        switch value {
        case nil, .null?: .unspecified
        case let .integer(number)?: AddressFamily(rawValue: number)
        default: nil
        }
    }

    private static func flags(_ value: JSONValue?) -> UInt64? {
        switch value {
        case nil, .null?: 0
        case let .integer(number)? where number >= 0: UInt64(number)
        default: nil
        }
    }

    /// Absent, null or 0: any interface; a negative index is refused.
    private static func ifindex(_ value: JSONValue?) -> Int32? {
        switch value {
        case nil, .null?: 0
        case let .integer(number)? where (0...Int64(Int32.max)).contains(number): Int32(number)
        default: nil
        }
    }
}

/// The error replies, named as resolved and the varlink service interface name them.
/// nss-resolve returns NSS_STATUS_UNAVAIL (the next source in nsswitch.conf is asked) for
/// the varlink-level ones (method not found, protocol) and NOTFOUND for resolved's own.
public enum VarlinkError: Error, Hashable, Sendable {
    /// Not a varlink call at all: the connection is closed without a reply.
    case protocolViolation
    case methodNotFound(String)
    case invalidParameter(String)
    /// The name does not exist, or has no address of the families asked.
    case noSuchResourceRecord
    /// The resolver answered with this response code (3: NXDOMAIN; 2: SERVFAIL).
    case dnsError(rcode: Int)
    /// The profile has no resolver to ask.
    case noNameServers
    case queryTimedOut

    public var reply: JSONValue? {
        switch self {
        case .protocolViolation: nil
        case let .methodNotFound(method): Self.error("org.varlink.service.MethodNotFound", ["method": .string(method)])
        case let .invalidParameter(name): Self.error("org.varlink.service.InvalidParameter", ["parameter": .string(name)])
        case .noSuchResourceRecord: Self.error(ResolveCall.interface + ".NoSuchResourceRecord", [:])
        case let .dnsError(rcode): Self.error(ResolveCall.interface + ".DNSError", ["rcode": .integer(Int64(rcode))])
        case .noNameServers: Self.error(ResolveCall.interface + ".NoNameServers", [:])
        case .queryTimedOut: Self.error(ResolveCall.interface + ".QueryTimedOut", [:])
        }
    }

    private static func error(_ name: String, _ parameters: [String: JSONValue]) -> JSONValue {
        .object([("error", .string(name)), ("parameters", .object(parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))])
    }
}
